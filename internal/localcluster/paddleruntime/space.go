package paddleruntime

// Whether an install failed for want of disk space is read from the
// filesystems pip writes to (statfs), not from pip's words.

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// fsFree is what statfs reports free on a filesystem, for this process.
type fsFree struct {
	bytes uint64
	// inodes is the free inodes; files is the filesystem's total, 0 when it
	// does not count them (then inodes means nothing).
	inodes, files uint64
}

// statFree is statfs, swapped by tests.
var statFree = func(path string) (fsFree, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return fsFree{}, err
	}
	free := uint64(st.Bavail)
	if os.Geteuid() == 0 { // root may use the blocks reserved for it
		free = uint64(st.Bfree)
	}
	return fsFree{bytes: free * uint64(st.Bsize), inodes: uint64(st.Ffree), files: uint64(st.Files)}, nil
}

// minFreeBytes and minFreeInodes are what a filesystem pip writes to must
// have left for an install to go on: below them it is full for pip, which
// writes files of megabytes by the thousand.
const (
	minFreeBytes  = 16 << 20
	minFreeInodes = 64
)

// full reports whether f is too full to install into.
func (f fsFree) full() bool {
	return f.bytes < minFreeBytes || (f.files > 0 && f.inodes < minFreeInodes)
}

func (f fsFree) String() string {
	if f.files > 0 && f.inodes < minFreeInodes {
		return fmt.Sprintf("%d free inodes", f.inodes)
	}
	return fmt.Sprintf("%s free", humanBytes(f.bytes))
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// pipDir is a directory pip writes to during an install, and the setting
// that moves it.
type pipDir struct{ what, path, moveWith string }

// pipDirs are the venv's cache and pip's temporary directory.
func (in *installer) pipDirs() []pipDir {
	return []pipDir{
		{"the cache " + in.root, in.root, "$PADDLEJOB_CACHE"},
		{"pip's temporary directory " + pipTempDir(), pipTempDir(), "$TMPDIR"},
	}
}

// pipTempDir is where pip (Python's tempfile) unpacks and downloads: the
// first of TMPDIR, TEMP and TMP that is set, else /tmp.
func pipTempDir() string {
	for _, name := range []string{"TMPDIR", "TEMP", "TMP"} {
		if d := os.Getenv(name); d != "" {
			return d
		}
	}
	return "/tmp"
}

// fullDisk says which directory pip writes to is on a full filesystem now,
// what it has free and how to move it; "" when none is (or statfs fails:
// no verdict).
func (in *installer) fullDisk() string {
	for _, d := range in.pipDirs() {
		if f, err := statFree(d.path); err == nil && f.full() {
			return fmt.Sprintf("the filesystem of %s has %s (free some, or set %s to a directory on another disk)", d.what, f, d.moveWith)
		}
	}
	return ""
}

// checkSpace refuses to start an install on a full filesystem: pip would
// fail in the middle of it.
func (in *installer) checkSpace() error {
	if full := in.fullDisk(); full != "" {
		return fmt.Errorf("no space left to install %s: %s", in.pins.label(), full)
	}
	return nil
}

// noSpaceError is the error of a pip run that failed for want of space, or
// nil. statfs decides when the filesystem is still full; pip removes its
// temporary files before it exits, so a download that filled the disk
// leaves nothing statfs can see, and then pip's own report of the OS
// error (errno 28, ENOSPC, which it prints only as text) is all there is.
func (in *installer) noSpaceError(out string) error {
	full := in.fullDisk()
	if full == "" && (strings.Contains(out, "[Errno 28]") || strings.Contains(out, "OSError(28,")) {
		dirs := in.pipDirs()
		full = fmt.Sprintf("a filesystem pip writes to filled up while it wrote, and freed as pip removed its temporary files: %s or %s", dirs[0].what, dirs[1].what)
	}
	if full == "" {
		return nil
	}
	return fmt.Errorf("no space left to install %s: %s; pip says%s\n(full output: %s)", in.pins.label(), full, indent(lastLines(out, 2)), in.logPath)
}
