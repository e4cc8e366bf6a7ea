package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// hostPathRules decide which host paths a pod may mount (hostPath volumes,
// hostPath and local PersistentVolumes, an absolute command) and which it may
// write. The cluster's state (the node's state directory, the hidden
// directories: the cluster's home with its keys and etcd) is never mounted,
// nor is a directory holding it; the rest is mounted read-only unless it is
// one of the writable directories or inside one (paddlejob up
// --host-path-rw).
type hostPathRules struct {
	// Hidden are the directories no pod may mount.
	Hidden []string
	// Writable are the directories whose paths pods may mount read-write.
	Writable []string
	// Outputs are more such directories, the output/ of the build
	// contexts the cluster's owner named: each counts only while it is a
	// directory whose absolute path holds no symlink, so that a link put in
	// its place (by a pod that can write beside it, say) leads nowhere
	// writable.
	Outputs []string
}

// errHostPathRefused marks a host path the rules refuse.
var errHostPathRefused = errors.New("refused")

// check refuses real, a path with no symlinks (an opened descriptor's), when
// it is a hidden directory, inside one, or holds one. Being in one is
// looked for first, and a holder is told the outermost directory it holds:
// the local cluster's node state lies in its home, both hidden, and the
// home is the cluster's state directory, not a holder of the node's.
func (h hostPathRules) check(real string) error {
	real = filepath.Clean(real)
	held := ""
	for _, hidden := range h.Hidden {
		for _, d := range realForms(hidden) {
			switch {
			case isUnder(real, d):
				return fmt.Errorf("%w: %s is the cluster's state directory %s or inside it: no pod may mount the cluster's keys and state", errHostPathRefused, real, hidden)
			case isUnder(d, real) && (held == "" || isUnder(held, hidden)):
				held = hidden
			}
		}
	}
	if held != "" {
		return fmt.Errorf("%w: %s holds the cluster's state directory %s: no pod may mount the cluster's keys and state; mount a directory beside it", errHostPathRefused, real, held)
	}
	return nil
}

// writable reports whether real, a path with no symlinks, may be mounted
// read-write.
func (h hostPathRules) writable(real string) bool {
	real = filepath.Clean(real)
	for _, w := range h.Writable {
		for _, d := range realForms(w) {
			if isUnder(real, d) {
				return true
			}
		}
	}
	for _, o := range h.Outputs {
		if isUnder(real, o) && realDirectory(o) {
			return true
		}
	}
	return false
}

// realDirectory reports whether dir is a directory and no part of its path
// a symlink.
func realDirectory(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	real, err := filepath.EvalSymlinks(dir)
	return err == nil && real == filepath.Clean(dir)
}

// checkPath is check for a path that may hold symlinks or not exist yet
// (a DirectoryOrCreate hostPath): it checks where the path leads now,
// before anything is created there. The mount checks again through the
// descriptor it binds.
func (h hostPathRules) checkPath(p string) error {
	for _, form := range []string{filepath.Clean(p), resolveExisting(p)} {
		if err := h.check(form); err != nil {
			return err
		}
	}
	return nil
}

// writablePath is writable for a path that may hold symlinks.
func (h hostPathRules) writablePath(p string) bool {
	return h.writable(resolveExisting(p))
}

// realForms are a directory as given and with its symlinks resolved.
func realForms(dir string) []string {
	dir = filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		return []string{dir, real}
	}
	return []string{dir}
}

// resolveExisting resolves the symlinks of the longest part of p that
// exists and appends the rest.
func resolveExisting(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return p
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// openCommand opens an absolute command no root or mount of the sandbox
// covers, so that the file alone (not its directory) is bound read-only at
// its path; a command in the cluster's state is refused.
func (h hostPathRules) openCommand(command string) (mount, error) {
	f, err := openPath(command)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return mount{}, fmt.Errorf("command %s: %w", command, fs.ErrNotExist)
		}
		return mount{}, fmt.Errorf("command %s: %w", command, err)
	}
	real, err := realPath(f)
	if err == nil {
		err = h.check(real)
	}
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(real); err == nil && (!st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0) {
			err = errors.New("not an executable file")
		}
	}
	if err != nil {
		f.Close()
		return mount{}, configErrorf("command %s: %s", command, strings.TrimPrefix(err.Error(), errHostPathRefused.Error()+": "))
	}
	return mount{Source: command, Target: command, ReadOnly: true, File: f}, nil
}
