package node

// Bind sources. Every path the node binds into a sandbox on a pod's behalf
// (its image copy's entries, its volumes and their subPaths, its command) is
// first opened as an O_PATH descriptor, resolved beneath the directory the pod
// may see there, and checked through that descriptor; bwrap then binds the
// descriptor itself (--bind-fd), so nothing can swap a path between the check
// and the bind, and no symlink can lead a bind out of its root.
//
// The kernel resolves (openat2 with RESOLVE_BENEATH, Linux 5.6 and later):
// golang.org/x/sys is already a dependency, the resolution is one atomic
// system call, and a link that leaves the root is an error (EXDEV) rather than
// silently re-rooted, which is what a subPath check wants to report. Older
// kernels get a walk one component at a time that holds a descriptor per
// directory and never asks the kernel to follow a link.

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// linkPolicy says which symlinks a resolution beneath a root may follow.
type linkPolicy int

const (
	// linksInside follows symlinks that stay beneath the root (a subPath
	// through a projection's ..data link); one that leaves it is an error.
	linksInside linkPolicy = iota
	// noLinks refuses every symlink (the image copy's bind points).
	noLinks
)

// errOutsideRoot is the error of a resolution that would leave its root.
var errOutsideRoot = errors.New("leads outside its root")

// errIsLink is the error of a resolution under noLinks that meets a symlink.
var errIsLink = errors.New("is or goes through a symbolic link")

// openRoot opens dir as the root of resolutions, following its symlinks (it
// is a path the node or the cluster's user chose).
func openRoot(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// openPath opens p, a file or directory, as an O_PATH descriptor, following
// its symlinks.
func openPath(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// openBeneath opens name, relative to root, as an O_PATH descriptor without
// leaving root: no absolute path, no ".." above it, no symlink out of it, no
// /proc magic link; under noLinks no symlink at all.
func openBeneath(root *os.File, name string, policy linkPolicy) (*os.File, error) {
	name = cleanBeneath(name)
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	if policy == noLinks {
		how.Resolve |= unix.RESOLVE_NO_SYMLINKS
	}
	fd, err := unix.Openat2(int(root.Fd()), name, &how)
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), path.Join(root.Name(), name)), nil
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && !openat2Works():
		return walkBeneath(root, name, policy)
	}
	return nil, beneathError(root, name, err)
}

// cleanBeneath cleans name as a path relative to a root: lexically, so a
// ".." can only climb back down what the name went up, never above the
// root; "." for the root itself.
func cleanBeneath(name string) string {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == "" {
		return "."
	}
	return name
}

func beneathError(root *os.File, name string, err error) error {
	switch {
	case errors.Is(err, unix.EXDEV):
		err = errOutsideRoot
	case errors.Is(err, unix.ELOOP):
		err = errIsLink
	case errors.Is(err, unix.EAGAIN):
		// The kernel saw a rename racing the resolution: refuse rather
		// than guess.
		err = fmt.Errorf("%w (it changed while being resolved)", errOutsideRoot)
	}
	return &os.PathError{Op: "open", Path: path.Join(root.Name(), name), Err: err}
}

// openat2Works reports whether openat2 is usable here: a seccomp filter may
// answer EPERM for a system call it does not know.
func openat2Works() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// walkBeneath is openBeneath without openat2: it opens one component at a
// time relative to the directory before it, never letting the kernel follow
// a link, resolving relative links itself and refusing absolute ones. ".."
// goes back to the directory it came from, never above root.
func walkBeneath(root *os.File, name string, policy linkPolicy) (*os.File, error) {
	name = cleanBeneath(name)
	top, err := unix.Dup(int(root.Fd()))
	if err != nil {
		return nil, err
	}
	stack := []int{top}
	defer func() {
		for _, fd := range stack {
			unix.Close(fd)
		}
	}()
	fail := func(err error) (*os.File, error) { return nil, beneathError(root, name, err) }
	parts := strings.Split(name, "/")
	links := 0
	for len(parts) > 0 {
		part := parts[0]
		parts = parts[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(stack) == 1 {
				return fail(unix.EXDEV)
			}
			unix.Close(stack[len(stack)-1])
			stack = stack[:len(stack)-1]
			continue
		}
		dir := stack[len(stack)-1]
		fd, err := unix.Openat(dir, part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return fail(err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			stack = append(stack, fd)
			continue
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(fd, "", buf)
		unix.Close(fd)
		switch {
		case err != nil:
			return fail(err)
		case policy == noLinks:
			return fail(unix.ELOOP)
		case links >= 40:
			return fail(unix.ELOOP)
		}
		links++
		target := string(buf[:n])
		if path.IsAbs(target) {
			return fail(unix.EXDEV)
		}
		parts = append(strings.Split(target, "/"), parts...)
	}
	last := stack[len(stack)-1]
	stack = stack[:len(stack)-1]
	return os.NewFile(uintptr(last), path.Join(root.Name(), name)), nil
}

// mkdirBeneath makes the directory name (and its parents) beneath root,
// each level created relative to a descriptor of the level before, so that
// no directory is made outside root.
func mkdirBeneath(root *os.File, name string, perm uint32) error {
	parts := strings.Split(strings.TrimPrefix(path.Clean("/"+name), "/"), "/")
	for i := range parts {
		if parts[i] == "" {
			continue
		}
		f, err := openBeneath(root, path.Join(parts[:i+1]...), linksInside)
		if err == nil {
			f.Close()
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			return err
		}
		parent, err := openBeneath(root, path.Join(parts[:i]...), linksInside)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(int(parent.Fd()), parts[i], perm)
		parent.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return &os.PathError{Op: "mkdir", Path: path.Join(root.Name(), path.Join(parts[:i+1]...)), Err: err}
		}
		if err == nil && perm&0o022 != 0 {
			// The umask took the write bits off: set them on the directory
			// made, through a descriptor, never through a link put there.
			if err := chmodBeneath(root, path.Join(parts[:i+1]...), perm); err != nil {
				return err
			}
		}
	}
	return nil
}

// chmodBeneath sets the mode of name, beneath root, with no link followed.
func chmodBeneath(root *os.File, name string, perm uint32) error {
	f, err := openBeneath(root, name, noLinks)
	if err != nil {
		return err
	}
	defer f.Close()
	return os.Chmod(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.FileMode(perm))
}

// realPath is the path a descriptor's file has now, as the kernel names it.
func realPath(f *os.File) (string, error) {
	return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
}
