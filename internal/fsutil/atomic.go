package fsutil

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data: a reader sees the old content or
// all of the new, never part of it, also after the writer is killed or the
// machine stops mid-write, and two writers of the same path each leave a
// whole file (the last rename wins). The data goes to a temporary file of
// its own beside path (so two writers never share one), is synced, and is
// renamed over path; the directory is synced so the rename itself lasts.
// A writer killed before its rename leaves its temporary file (named
// .<base>.tmp-<random>), never a broken path.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes dir's entries (a rename into it) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
