package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "pkg", "bin"), 0o755))
	must(os.WriteFile(filepath.Join(src, "pkg", "bin", "train"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(src, "pkg", "data.txt"), []byte("new"), 0o644))
	must(os.Symlink("bin/train", filepath.Join(src, "pkg", "entry")))
	// What dst holds already is replaced.
	must(os.MkdirAll(filepath.Join(dst, "pkg"), 0o755))
	must(os.WriteFile(filepath.Join(dst, "pkg", "data.txt"), []byte("old and longer"), 0o600))
	must(os.Symlink("elsewhere", filepath.Join(dst, "pkg", "entry")))

	must(CopyTree(src, dst))

	if b, err := os.ReadFile(filepath.Join(dst, "pkg", "data.txt")); err != nil || string(b) != "new" {
		t.Errorf("data.txt = %q, %v; want %q", b, err, "new")
	}
	if info, err := os.Stat(filepath.Join(dst, "pkg", "bin", "train")); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("bin/train: %v, %v; want mode 0755", info, err)
	}
	if link, err := os.Readlink(filepath.Join(dst, "pkg", "entry")); err != nil || link != "bin/train" {
		t.Errorf("entry -> %q, %v; want bin/train", link, err)
	}
}

func TestLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan struct{})
	go func() {
		unlock2, err := Lock(path)
		if err != nil {
			t.Error(err)
		} else {
			unlock2()
		}
		close(second)
	}()
	// Once the kernel lists the second Lock as waiting for the file, it
	// has been refused the lock: no sleep needed to let it try.
	waiting := blockedFlock(t, path)
	for deadline := time.Now().Add(30 * time.Second); !waiting(); time.Sleep(10 * time.Millisecond) {
		select {
		case <-second:
			t.Fatal("a second Lock got the lock while the first held it")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the second Lock neither got the lock nor waits for it")
		}
	}
	select {
	case <-second:
		t.Fatal("a second Lock got the lock while the first held it")
	default:
	}
	unlock()
	select {
	case <-second:
	case <-time.After(30 * time.Second):
		t.Fatal("the second Lock did not get the lock once it was released")
	}
}

// blockedFlock returns a check whether some flock of path waits for the
// lock: /proc/locks marks such a request "->", with the file's device
// (major:minor in hex) and inode.
func blockedFlock(t *testing.T, path string) func() bool {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	dev := uint64(st.Dev)
	major, minor := (dev>>8)&0xfff|(dev>>32)&^uint64(0xfff), dev&0xff|(dev>>12)&^uint64(0xff)
	file := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	return func() bool {
		locks, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(locks), "\n") {
			if f := strings.Fields(line); len(f) > 6 && f[1] == "->" && f[2] == "FLOCK" && f[6] == file {
				return true
			}
		}
		return false
	}
}
