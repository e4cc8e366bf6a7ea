package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateExamplesDir: up makes the examples' output directory, writable
// by every pod uid, only when pods may write there; one that exists is left
// as it is.
func TestCreateExamplesDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "paddlejob-examples")

	if err := createExamplesDir(dir, []string{base}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("created %s though pods may not write there (%v)", dir, err)
	}

	if err := createExamplesDir(dir, []string{dir}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Fatalf("%s: %v, %v; want a directory with mode 0777", dir, fi, err)
	}

	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := createExamplesDir(dir, []string{dir}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 {
		t.Errorf("an existing %s changed to %v", dir, fi.Mode().Perm())
	}

	missing := filepath.Join(base, "no", "such")
	err = createExamplesDir(missing, []string{missing})
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--host-path-rw") {
		t.Errorf("a directory that cannot be made: %v", err)
	}
}
