package runtimenode

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// What the node leaves of the machine when it stops: nothing. Its pods'
// processes are in its cgroup root, containerd's shims name its socket, and
// every mount the kubelet and containerd made is under its state directory.

const cgroupFS = "/sys/fs/cgroup"

// childAttrs: containerd and the kubelet die with the node process.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// cgroupDirs are root's directories in every cgroup hierarchy: the unified
// one (v2), or each v1 controller's.
func cgroupDirs(root string) []string {
	if _, err := os.Stat(filepath.Join(cgroupFS, "cgroup.controllers")); err == nil {
		return []string{filepath.Join(cgroupFS, root)}
	}
	entries, _ := os.ReadDir(cgroupFS)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(cgroupFS, e.Name(), root))
		}
	}
	return dirs
}

// makeCgroupRoot creates the cgroup root in every hierarchy: the kubelet
// refuses a cgroup root that does not exist.
func makeCgroupRoot(root string) error {
	for _, d := range cgroupDirs(root) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating the node's cgroup %s: %w", d, err)
		}
		// A v1 cpuset cgroup starts with no CPUs and no memory nodes: a
		// process cannot join it until they are copied from its parent.
		if strings.Contains(d, "/cpuset/") {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if v, err := os.ReadFile(filepath.Join(filepath.Dir(d), f)); err == nil {
					_ = os.WriteFile(filepath.Join(d, f), v, 0)
				}
			}
		}
	}
	return nil
}

// CleanUp removes what a node whose process was killed left of it: what
// Run removes when it stops. It is safe to call for a node that stopped.
func CleanUp(c Config) { c.cleanUp() }

// cleanUp kills what is left of the pods and shims, unmounts what is
// mounted under the state directory, and removes the cgroups.
func (c Config) cleanUp() {
	killCgroup(c.CgroupRoot)
	killShims(c.ContainerdSocket())
	for _, d := range []string{c.StateDir, c.containerdState()} {
		fsutil.UnmountUnder(d)
	}
	_ = os.RemoveAll(c.containerdState())
	removeLogLinks(c.podLogsDir())
	removeCgroup(c.CgroupRoot)
}

// killCgroup kills every process in root's cgroups, in every hierarchy.
func killCgroup(root string) {
	for _, d := range cgroupDirs(root) {
		_ = filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

// removeCgroup removes root's cgroups, deepest first.
func removeCgroup(root string) {
	for _, d := range cgroupDirs(root) {
		var dirs []string
		_ = filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, dir := range dirs {
			_ = os.Remove(dir)
		}
	}
}

// killShims kills the containerd shims serving containerd at socket: they
// outlive containerd by design.
func killShims(socket string) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
		if len(args) > 0 && filepath.Base(string(args[0])) == "containerd-shim-runc-v2" && slices.ContainsFunc(args, func(a []byte) bool { return string(a) == socket }) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// containerLogLinks is where the kubelet links every container's log,
// whatever its pod logs directory.
const containerLogLinks = "/var/log/containers"

// removeLogLinks removes the kubelet's links to the node's container logs.
func removeLogLinks(podLogs string) {
	entries, _ := os.ReadDir(containerLogLinks)
	for _, e := range entries {
		link := filepath.Join(containerLogLinks, e.Name())
		if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, podLogs+"/") {
			_ = os.Remove(link)
		}
	}
}
