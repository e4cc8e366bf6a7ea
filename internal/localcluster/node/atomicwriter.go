package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// dataLink names the symlink to a projection's current payload directory.
const dataLink = "..data"

// projectedFile is one file of a configMap, secret, downwardAPI or projected
// volume.
type projectedFile struct {
	Data []byte
	Mode int32
}

// writeProjection makes dir hold exactly files, switching from the old to the
// new content in one step, as the kubelet does: the files live in a fresh
// hidden directory, the ..data symlink is renamed to point at it, and each
// top-level name is a symlink through ..data. Readers see either all the old
// files or all the new ones, never a partial file.
func writeProjection(dir string, files map[string]projectedFile) error {
	for p := range files {
		if err := validateProjectedPath(p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	payload, err := os.MkdirTemp(dir, "..payload-")
	if err != nil {
		return err
	}
	if err := writePayload(payload, files); err != nil {
		_ = os.RemoveAll(payload)
		return err
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))

	tmpLink := filepath.Join(dir, dataLink+"-tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(payload), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataLink)); err != nil {
		return err
	}

	top := map[string]bool{}
	for p := range files {
		top[strings.SplitN(p, "/", 2)[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataLink, name), link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") && !top[e.Name()] {
			errs = append(errs, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	if old != "" && old != filepath.Base(payload) {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, old)))
	}
	return errors.Join(errs...)
}

func writePayload(dir string, files map[string]projectedFile) error {
	for p, f := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(f.Mode) & os.ModePerm
		if err := os.WriteFile(full, f.Data, mode); err != nil {
			return err
		}
		// WriteFile's mode is filtered by the umask.
		if err := os.Chmod(full, mode); err != nil {
			return err
		}
	}
	return os.Chmod(dir, 0o755)
}

// validateProjectedPath rejects paths that would leave the volume or clash
// with its bookkeeping names.
func validateProjectedPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty file path in volume")
	case filepath.IsAbs(p):
		return fmt.Errorf("file path %q in volume must be relative", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("file path %q in volume must not start with '..'", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("file path %q in volume must not contain '..'", p)
		}
	}
	return nil
}
