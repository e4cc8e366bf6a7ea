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
// write. A pod mounts nothing of the host but what the cluster's owner listed
// (paddlejob up --host-path-ro and --host-path-rw, the build contexts and
// their output/): deny by default. Never, listed or not: the cluster's state
// (the node's state directory, the hidden directories: the cluster's home
// with its keys and etcd), the user's kubeconfigs, the kernel's /proc, /sys
// and /dev, a directory holding any of them, and a file that is neither a
// regular file nor a directory (a Unix socket connects whatever the mount's
// read-only flag says).
type hostPathRules struct {
	// Hidden are the directories no pod may mount.
	Hidden []string
	// HiddenFiles are files no pod may mount, nor a directory holding one:
	// the kubeconfigs holding the cluster's admin credentials, and other
	// clusters' (paddlejob up --hide-file).
	HiddenFiles []string
	// Readable are the directories whose paths pods may mount read-only
	// (--host-path-ro).
	Readable []string
	// Writable are the directories whose paths pods may mount read-write.
	Writable []string
	// Contexts are the build contexts of the image table: pods may mount
	// their paths read-only (paddlejob init's jobs mount data/), each while
	// it is a directory whose absolute path holds no symlink.
	Contexts []string
	// Outputs are more such directories, the output/ of the build
	// contexts the cluster's owner named: each counts only while it is a
	// directory whose absolute path holds no symlink, so that a link put in
	// its place (by a pod that can write beside it, say) leads nowhere
	// writable.
	Outputs []string
}

// kernelDirs are the host's views of its kernel: /proc shows every host
// process (their environments and open files to their owner), /sys and /dev
// the machine's devices. The sandbox gives a pod its own /proc and /dev and
// /sys read-only; a hostPath never gives the host's.
var kernelDirs = []string{"/proc", "/sys", "/dev"}

// errHostPathRefused marks a host path the rules refuse.
var errHostPathRefused = errors.New("refused")

// check refuses real, a path with no symlinks (an opened descriptor's), when
// it is a hidden directory, inside one, or holds one. Being in one is
// looked for first, and a holder is told the outermost directory it holds:
// the local cluster's node state lies in its home, both hidden, and the
// home is the cluster's state directory, not a holder of the node's. It
// refuses the kernel's directories and the hidden files (a kubeconfig) the
// same way. What it lets through may still be refused by allowed.
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
	for _, k := range kernelDirs {
		switch {
		case isUnder(real, k):
			return fmt.Errorf("%w: %s is the host's %s or inside it: no pod may mount the host's kernel views (processes, devices)", errHostPathRefused, real, k)
		case isUnder(k, real):
			return fmt.Errorf("%w: %s holds the host's %s: no pod may mount the host's kernel views (processes, devices); mount a directory beside it", errHostPathRefused, real, k)
		}
	}
	for _, file := range h.HiddenFiles {
		for _, f := range realForms(file) {
			if isUnder(f, real) {
				return fmt.Errorf("%w: %s is or holds the kubeconfig %s: no pod may mount cluster credentials; mount a directory beside it", errHostPathRefused, real, file)
			}
		}
	}
	return nil
}

// checkVolume is check for a host volume, real with no symlinks, then
// allowed, then its kind: only regular files and directories.
func (h hostPathRules) checkVolume(real string, fi os.FileInfo) error {
	if err := h.check(real); err != nil {
		return err
	}
	if err := h.allowed(real); err != nil {
		return err
	}
	if fi != nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is a %s: pods may mount only regular files and directories (a Unix socket connects through a read-only mount)", errHostPathRefused, real, fileKind(fi.Mode()))
	}
	return nil
}

// fileKind names a mode's type.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSocket != 0:
		return "Unix socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

// allowed refuses real, a path with no symlinks, unless it lies in a
// directory the cluster's owner listed (read-only or read-write), a build
// context or its output/: what a pod may mount of the host is what the
// owner chose, nothing else.
func (h hostPathRules) allowed(real string) error {
	real = filepath.Clean(real)
	if h.writable(real) {
		return nil
	}
	for _, r := range h.Readable {
		for _, d := range realForms(r) {
			if isUnder(real, d) {
				return nil
			}
		}
	}
	for _, c := range h.Contexts {
		if isUnder(real, c) && realDirectory(c) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is in no directory pods may mount: allow it (or a directory holding it) with paddlejob up --host-path-ro DIR (read-only) or --host-path-rw DIR (read-write)", errHostPathRefused, real)
}

// writable reports whether real, a path with no symlinks, may be mounted
// read-write.
func (h hostPathRules) writable(real string) bool {
	return h.writableRoot(real) != ""
}

// writableRoot is the writable directory real, a path with no symlinks,
// lies in ("" for none), as a path with no symlinks.
func (h hostPathRules) writableRoot(real string) string {
	real = filepath.Clean(real)
	for _, w := range h.Writable {
		for _, d := range realForms(w) {
			if isUnder(real, d) {
				return d
			}
		}
	}
	for _, o := range h.Outputs {
		if isUnder(real, o) && realDirectory(o) {
			return o
		}
	}
	return ""
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

// checkPath is checkVolume for a path that may hold symlinks or not exist
// yet (a DirectoryOrCreate hostPath): it checks where the path leads now,
// before anything is created there (the path as written must not be the
// cluster's state either). The mount checks again through the descriptor it
// binds.
func (h hostPathRules) checkPath(p string) error {
	if err := h.check(filepath.Clean(p)); err != nil {
		return err
	}
	real := resolveExisting(p)
	fi, _ := os.Stat(real)
	return h.checkVolume(real, fi)
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
