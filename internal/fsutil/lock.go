package fsutil

import (
	"fmt"
	"os"
	"syscall"
)

// Lock takes an exclusive advisory lock (flock) on path, creating the file,
// and waits for it; unlock releases it. Processes that share a directory,
// such as two builds of the same cache, serialise on it.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
