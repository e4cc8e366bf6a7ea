package node

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Staging: how a sandbox bwrap runs as an unprivileged host user
// (sandbox_hostids.go) gets its mounts. bwrap resolves every bind source
// with realpath(3) as its caller, which walks the source's path component by
// component: the node's state directory and the Paddle runtimes live under
// /root (mode 0700), out of that user's reach, and even /proc/self/fd/N
// resolves to such a path. So, for each run, the node (root) binds every
// source it opened (and checked) through its descriptor onto a path of a
// staging tmpfs that any user may traverse (0711, entries not listable), and
// bwrap binds from there; once bwrap has cloned the sandbox, whose mount
// namespace holds its own copies, the node unmounts them. The tmpfs is a
// private mount, so nothing staged propagates to other mount namespaces;
// the node mounts it afresh when it starts, which also clears what a node
// that died left staged.
//
// A writable host path is staged as an idmapped mount (Linux 5.12; ext4,
// xfs, btrfs, tmpfs): on-disk ids 0-65535 are the range's base to
// base+65535, so a pod's uid u writes files owned by u on the host and sees
// the host's own files of u as its own, as Kubernetes' idmapped volumes do:
// a pod running as root (base+0) writes the host's root-owned directories
// there as a container's root does, and what it makes is root's on the
// host. The seccomp filter refuses it a set-user-ID or set-group-ID mode
// (seccomp.go), so nothing it leaves runs as the host's root.

// stageParent holds the nodes' staging directories.
const stageParent = "/run/paddlejob-stage"

// stager stages the mounts of a root node's sandboxes.
type stager struct {
	dir string
	// userns is the idmap of writable host paths (idmapUserNamespace).
	userns *os.File
}

// newStager mounts the node's staging tmpfs, named after its state
// directory, and makes the idmap's user namespace.
func newStager(stateDir string, ids hostIDRange) (*stager, error) {
	dir := filepath.Join(stageParent, fmt.Sprintf("%x", sha256.Sum256([]byte(filepath.Clean(stateDir))))[:12])
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("staging directory: %w", err)
	}
	if err := os.Chmod(stageParent, 0o711); err != nil {
		return nil, err
	}
	unmountAll(dir)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0711,size=1m"); err != nil {
		return nil, fmt.Errorf("mounting the staging tmpfs on %s: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		unmountAll(dir)
		return nil, fmt.Errorf("making %s private: %w", dir, err)
	}
	userns, err := idmapUserNamespace(ids)
	if err != nil {
		unmountAll(dir)
		return nil, fmt.Errorf("the user namespace of writable host paths' idmap: %w", err)
	}
	return &stager{dir: dir, userns: userns}, nil
}

// close unmounts the staging tmpfs and removes its mount point.
func (s *stager) close() {
	unmountAll(s.dir)
	_ = os.Remove(s.dir)
	s.userns.Close()
}

// unmountAll detaches every mount stacked on dir.
func unmountAll(dir string) {
	for unix.Unmount(dir, unix.MNT_DETACH) == nil {
	}
}

// idmapUserNamespace makes a user namespace mapping ids 0-65535 inside to
// base to base+65535 outside and returns a descriptor holding it. A
// process of the node's own can make it (a multithreaded one cannot
// unshare a user namespace): a cat waiting on its input, whose maps the Go
// runtime writes before it runs, let go once its namespace is held.
func idmapUserNamespace(ids hostIDRange) (*os.File, error) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cat)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	maps := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(ids.Base), Size: hostIDRangeSize}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: maps, GidMappings: maps}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ns, err := os.Open("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/user")
	in.Close()
	_ = cmd.Wait()
	return ns, err
}

// stagedRun is what one run has staged: its directory and the mount
// points in it.
type stagedRun struct {
	dir    string
	points []string
}

// unmount detaches the staged mounts, here only: the sandbox's mount
// namespace, cloned before, keeps its copies (the staging tmpfs is private,
// so nothing propagates). Host processes no longer reach the pod's sources
// through the staging.
func (r *stagedRun) unmount() {
	for i := len(r.points) - 1; i >= 0; i-- {
		_ = unix.Unmount(r.points[i], unix.MNT_DETACH)
	}
}

// remove deletes the run's mount points, once its sandbox is gone: the
// kernel detaches the mounts on a mount point it deletes in every mount
// namespace, the sandbox's included. Entry by entry, never recursively: a
// mount left in place is not entered (a writable host path is the users'
// files).
func (r *stagedRun) remove() {
	r.unmount()
	for i := len(r.points) - 1; i >= 0; i-- {
		_ = os.Remove(r.points[i])
	}
	_ = os.Remove(r.dir)
}

// stage binds the sandbox's mount sources and its hosts, hostname and
// resolv.conf files under the staging directory, in a directory of the run's
// own, and points the sandbox at them. The caller unmounts them once bwrap
// has cloned the sandbox and removes them once the sandbox is gone; stage
// removes them itself on error.
func (s *stager) stage(run string, sb *sandboxSpec) (_ *stagedRun, err error) {
	staged := &stagedRun{dir: filepath.Join(s.dir, run)}
	if err := os.Mkdir(staged.dir, 0o711); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			staged.remove()
		}
	}()
	next := func(f *os.File, source string, idmap bool) (string, error) {
		target := filepath.Join(staged.dir, strconv.Itoa(len(staged.points)))
		if f == nil {
			opened, err := openPath(source)
			if err != nil {
				return "", err
			}
			defer opened.Close()
			f = opened
		}
		err := s.bind(f, target, idmap)
		staged.points = append(staged.points, target) // its mount point, at least
		if err != nil {
			return "", fmt.Errorf("staging %s: %w", source, err)
		}
		return target, nil
	}
	for i := range sb.Mounts {
		m := &sb.Mounts[i]
		if m.Symlink != "" {
			continue
		}
		if m.Source, err = next(m.File, m.Source, m.IDMap); err != nil {
			return nil, err
		}
		m.File = nil
	}
	for _, p := range []*string{&sb.HostsFile, &sb.HostnameFile, &sb.ResolvConfFile} {
		if *p == "" {
			continue
		}
		if *p, err = next(nil, *p, false); err != nil {
			return nil, err
		}
	}
	sb.BindFD = false
	return staged, nil
}

// bind mounts what f is on target, made as a directory or a file as f is;
// idmapped through the stager's user namespace when asked.
func (s *stager) bind(f *os.File, target string, idmap bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := os.Mkdir(target, 0o700); err != nil {
			return err
		}
	} else if err := os.WriteFile(target, nil, 0o600); err != nil {
		return err
	}
	if !idmap {
		return unix.Mount("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), target, "", unix.MS_BIND|unix.MS_REC, "")
	}
	tree, err := unix.OpenTree(int(f.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(s.userns.Fd())}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		if errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("its file system cannot be idmapped (Linux 5.12 and ext4, xfs, btrfs or tmpfs can), so pods of a root node cannot write it: %w", err)
		}
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}
