package e2e

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// upAsNormalUser starts a local cluster as u, the way that user would: `paddlejob
// up` with HOME the user's, the cluster's home the default ~/.paddlejob,
// the control-plane binaries and the Paddle runtime the suite's (copies the
// user can read: the originals are root's), and the cluster started inside
// cgroups delegated to the user, so that the node may limit its pods. The
// returned cluster carries a client of it (pj); when the test ends
// `paddlejob down`, as the user, stops it, and no process of the user may be
// left.
func upAsNormalUser(t *testing.T, u *normalUser) *sandboxCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	shared := filepath.Join(u.dir, "shared")
	planeDir, err := kubebin.Ensure(ctx, kubebin.Options{Dirs: opts.BinaryDirs}, kubebin.AllComponents...)
	if err != nil {
		t.Fatal(err)
	}
	plane := shareWithUser(t, filepath.Join(shared, "control-plane"), planeDir)
	dnsDir, err := kubebin.EnsureClusterDNS(ctx, kubebin.Options{Dirs: opts.BinaryDirs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dnsDir, "coredns"), filepath.Join(plane, "coredns")); err != nil {
		t.Fatalf("sharing CoreDNS with %s: %v", u.name, err)
	}
	paddlejob := &userPaddlejob{u: u, bin: filepath.Join(shareWithUser(t, filepath.Join(shared, "bin"), binDir), "paddlejob"),
		runtime: paddleRuntimeForUser(t, u, filepath.Join(shared, "paddle-runtime")), cgroupProcs: delegateCgroups(t, u)}
	c, table := normalUserFiles(t, u)
	var ports []int
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := paddlejob.run(t, ctx, "down"); err != nil {
			t.Errorf("paddlejob down as %s: %v", u.name, err)
		}
		checkDownLeftNothing(t, c.home, ports)
		if left := u.processes(false); len(left) > 0 {
			t.Errorf("processes of %s left after down:\n%s", u.name, describeProcesses(left))
		}
	})
	// Two nodes: the pod network's checks cross the cluster network, which
	// a normal user's nodes join each from a user namespace of its own.
	if err := paddlejob.run(t, ctx, "up", "--nodes", "2", "--binaries", plane, "--capacity", opts.Capacity, "--image-table", table,
		"--host-path-rw", c.writableDir); err != nil {
		t.Fatalf("paddlejob up as %s: %v", u.name, err)
	}
	st, err := localcluster.Running(ctx, localcluster.Options{Home: c.home})
	if err != nil {
		t.Fatal(err)
	}
	c.st, ports = st, st.Ports.All()
	userClient, err := client.NewFromKubeconfig(st.Kubeconfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	c.pj = userClient
	return c
}

// normalUserFiles are the user's files the sandbox checks need (a secret,
// the links image's build context and table, a directory for pods to write
// to), the user's own, and the checks' view of the cluster the user is to
// start; and the image table's path.
func normalUserFiles(t *testing.T, u *normalUser) (*sandboxCluster, string) {
	t.Helper()
	c := &sandboxCluster{home: filepath.Join(u.home, ".paddlejob"), userHome: u.home,
		podUID: u.uid, podGID: u.gid, nodeUID: u.uid, nodeGID: u.gid, writableDir: filepath.Join(u.home, "out"),
		kubeconfig: filepath.Join(u.home, ".kube", "config")}
	c.secret = writeSecret(t, u.home)
	table := linksImageTable(t, filepath.Join(u.home, "links-image"), c)
	if err := os.Mkdir(c.writableDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{c.secret, filepath.Join(u.home, "links-image"), c.writableDir} {
		u.giveTree(t, p)
	}
	return c, table
}

// userPaddlejob runs the paddlejob binary bin as u, with the Paddle runtime
// runtime, in the cgroups whose cgroup.procs files are cgroupProcs.
type userPaddlejob struct {
	u            *normalUser
	bin, runtime string
	cgroupProcs  []string
}

// run runs paddlejob with args and logs its output. A shell of the user's
// moves itself into the delegated groups and runs paddlejob there, so that
// everything the cluster starts is inside.
func (p *userPaddlejob) run(t *testing.T, ctx context.Context, args ...string) error {
	var enter strings.Builder
	for _, procs := range p.cgroupProcs {
		fmt.Fprintf(&enter, "echo $$ > '%s' || exit 125; ", procs)
	}
	enter.WriteString(`exec "$@"`)
	cmd := p.u.command(ctx, []string{paddleruntime.EnvDir + "=" + p.runtime}, "/bin/sh",
		append([]string{"-c", enter.String(), "sh", p.bin}, args...)...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("as %s: paddlejob %s (%s):\n%s", p.u.name, strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), out)
	return err
}

// shareWithUser copies the tree at src to dst, a directory every user may
// read but only root write, and returns dst. Files are hard links where the
// file system allows (they keep their owner and modes: the originals are
// readable by all, only their directories are not).
func shareWithUser(t *testing.T, dst, src string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(src, dst, nil, nil); err != nil {
		t.Fatalf("sharing %s: %v", src, err)
	}
	return dst
}

// copyTree copies the tree at src to dst (which must not exist): directories
// made 0755, files hard-linked (copied across file systems), symlinks
// copied, their targets moved where they lie in one of the directories
// moves maps to a new place. The directories of leaveOut are copied empty.
func copyTree(src, dst string, moves map[string]string, leaveOut []string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(to, 0o755); err != nil { // past the umask
				return err
			}
			if slices.Contains(leaveOut, path) {
				return filepath.SkipDir
			}
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(movedPath(target, moves), to)
		case d.Type().IsRegular():
			if err := os.Link(path, to); err == nil {
				return nil
			}
			return copyFile(path, to)
		}
		return nil // sockets, pipes: nothing the cluster needs
	})
}

// movedPath is p moved by moves (old directory -> new), or p.
func movedPath(p string, moves map[string]string) string {
	for old, moved := range moves {
		if p == old || strings.HasPrefix(p, old+"/") {
			return moved + p[len(old):]
		}
	}
	return p
}

// copyFile copies a regular file with its permission bits.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, fi.Mode().Perm())
}

// delegateCgroups gives u a cgroup of its own in each cgroup v1 hierarchy the
// node limits pods with (memory, cpu, pids), as an administrator (or
// systemd's Delegate=) gives one: a group below the test's own, owned by the
// user, so that the user may make groups in it and move its processes into
// them. It returns the groups' cgroup.procs files. When the test ends the
// groups are removed, with whatever process of the user is left in them.
func delegateCgroups(t *testing.T, u *normalUser) []string {
	t.Helper()
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t.Fatal("this machine has cgroup v2 alone: the test delegates cgroup v1 hierarchies only")
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]string{} // controller -> the test's group
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 {
			for _, c := range strings.Split(parts[1], ",") {
				own[c] = parts[2]
			}
		}
	}
	var procs []string
	for _, c := range []string{"memory", "cpu", "pids"} {
		path, ok := own[c]
		if !ok {
			t.Fatalf("no cgroup v1 %s hierarchy in /proc/self/cgroup:\n%s", c, self)
		}
		dir := filepath.Join("/sys/fs/cgroup", c, path, u.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeCgroupTree(t, dir) })
		for _, f := range []string{"", "cgroup.procs", "tasks"} {
			if err := os.Chown(filepath.Join(dir, f), u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	t.Logf("delegated to %s: %s", u.name, strings.Join(procs, " "))
	return procs
}

// removeCgroupTree removes the group at dir and the groups in it, deepest
// first, killing the processes still in them (the user's).
func removeCgroupTree(t *testing.T, dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for _, d := range slices.Backward(dirs) {
		poll(t, time.Minute, "cgroup "+d+" removed", func() (bool, string) {
			if err := os.Remove(d); err == nil || os.IsNotExist(err) {
				return true, "removed"
			}
			procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			for _, pid := range strings.Fields(string(procs)) {
				killPid(pid)
			}
			return false, "holds pids " + strings.Join(strings.Fields(string(procs)), " ")
		})
	}
}
