package e2e

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
)

// paddleRuntimeForUser is the Paddle runtime the suite's clusters run on
// (the default release's), as u can run it, for $PADDLEJOB_PADDLE_RUNTIME:
// the runtime itself when the user can reach it, else a copy in dst: the
// runtime moved, the venv and the interpreter's prefix it links to (its host
// paths) together, with the links and files that name their old places
// changed.
func paddleRuntimeForUser(t *testing.T, u *normalUser, dst string) string {
	t.Helper()
	rt, err := paddleruntime.EnsureRelease(context.Background(), paddleruntime.Options{Log: io.Discard}, paddleruntime.DefaultRelease)
	if err != nil {
		t.Fatal(err)
	}
	moves := map[string]string{} // host path -> its copy
	for i, p := range rt.HostPaths {
		if !reachableBy(u, p) {
			moves[p] = filepath.Join(dst, fmt.Sprintf("%d-%s", i, filepath.Base(p)))
		}
	}
	if len(moves) == 0 {
		return rt.Dir
	}
	if _, ok := moves[rt.Dir]; !ok { // its python's link must follow the interpreter
		moves[rt.Dir] = filepath.Join(dst, "venv-"+filepath.Base(rt.Dir))
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	// The venv has packages of its own, not the interpreter's: the
	// interpreter's site-packages are left out.
	var leaveOut []string
	if v := strings.Split(rt.PythonVersion, "."); len(v) >= 2 {
		for _, p := range rt.HostPaths {
			if p != rt.Dir {
				leaveOut = append(leaveOut, filepath.Join(p, "lib", "python"+v[0]+"."+v[1], "site-packages"))
			}
		}
	}
	for old, moved := range moves {
		if err := copyTree(old, moved, moves, leaveOut); err != nil {
			t.Fatalf("copying the Paddle runtime's %s: %v", old, err)
		}
	}
	venv := moves[rt.Dir]
	// pyvenv.cfg names the interpreter's directory: a file of the copy's own
	// (not the hard link's) names the copy's.
	cfg := filepath.Join(venv, "pyvenv.cfg")
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for old, moved := range moves {
		text = bytes.ReplaceAll(text, []byte(old), []byte(moved))
	}
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, text, 0o644); err != nil {
		t.Fatal(err)
	}
	// Without the manifest, which names the originals, up checks the copy
	// as any runtime a user names: its python must import paddle.
	if err := os.Remove(filepath.Join(venv, paddleruntime.ManifestName)); err != nil {
		t.Fatal(err)
	}
	// The interpreter finds libpython on a RUNPATH naming its prefix: the
	// copy's names its own, relative to the binary ($ORIGIN).
	python, err := filepath.EvalSymlinks(filepath.Join(venv, "bin", "python3"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unshareFile(python); err != nil {
		t.Fatal(err)
	}
	if err := relocateRunpath(python, moves); err != nil {
		t.Fatal(err)
	}
	t.Logf("the Paddle runtime %s, copied for %s to %s", rt.Dir, u.name, venv)
	return venv
}

// reachableBy reports whether u may reach path: every directory on the way
// lets the user (its owner) or others search it.
func reachableBy(u *normalUser, path string) bool {
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		search := os.FileMode(0o001)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == u.uid {
			search = 0o100
		}
		if fi.IsDir() && fi.Mode().Perm()&search == 0 {
			return false
		}
		if p == "/" {
			return true
		}
	}
}

// unshareFile replaces a hard link by a copy of its own, to be changed.
func unshareFile(path string) error {
	tmp := path + ".copy"
	if err := copyFile(path, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// relocateRunpath rewrites the RUNPATH (or RPATH) of the ELF binary at path
// in place: each directory in a moved tree becomes the moved directory
// relative to the binary's ($ORIGIN/...), which must be no longer than what
// it replaces (the rest is padded with NULs).
func relocateRunpath(path string, moves map[string]string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dynamic, dynstr := f.Section(".dynamic"), f.Section(".dynstr")
	if dynamic == nil || dynstr == nil {
		return nil // static: no library to find
	}
	runpaths, err := f.DynString(elf.DT_RUNPATH)
	if err != nil {
		return err
	}
	if rpaths, err := f.DynString(elf.DT_RPATH); err == nil {
		runpaths = append(runpaths, rpaths...)
	}
	table, err := dynstr.Data()
	if err != nil {
		return err
	}
	for _, old := range runpaths {
		var dirs []string
		for _, d := range strings.Split(old, ":") {
			if moved := movedPath(d, moves); moved != d {
				rel, err := filepath.Rel(filepath.Dir(path), moved)
				if err != nil {
					return err
				}
				d = "$ORIGIN/" + rel
			}
			dirs = append(dirs, d)
		}
		relocated := strings.Join(dirs, ":")
		if relocated == old {
			continue
		}
		if len(relocated) > len(old) {
			return fmt.Errorf("%s: the relocated RUNPATH %q is longer than %q", path, relocated, old)
		}
		at := bytes.Index(table, append([]byte(old), 0))
		if at < 0 {
			return fmt.Errorf("%s: RUNPATH %q not in .dynstr", path, old)
		}
		if err := writeAt(path, int64(dynstr.Offset)+int64(at), append([]byte(relocated), make([]byte, len(old)-len(relocated))...)); err != nil {
			return err
		}
	}
	return nil
}

func writeAt(path string, offset int64, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, offset); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
