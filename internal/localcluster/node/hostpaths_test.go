package node

import (
	"os"
	"path/filepath"
	"testing"
)

// A build context's output/ is writable, with what lies beneath it, while
// it is a real directory: replaced by a symlink (to the home, say), or
// gone, it makes nothing writable. Beside it, nothing is writable.
func TestBuildContextOutputsAreWritable(t *testing.T) {
	root := t.TempDir()
	ctx, elsewhere := filepath.Join(root, "my-ctr"), filepath.Join(root, "elsewhere")
	output := filepath.Join(ctx, "output")
	for _, d := range []string{filepath.Join(output, "ps"), elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rules := hostPathRules{Outputs: []string{output}}
	check := func(when string, want map[string]bool) {
		t.Helper()
		for p, w := range want {
			if got := rules.writablePath(p); got != w {
				t.Errorf("%s: %s writable: %v, want %v", when, p, got, w)
			}
		}
	}
	check("a directory", map[string]bool{
		output:                                 true,
		filepath.Join(output, "ps"):            true,
		filepath.Join(output, "ps", "not-yet"): true, // a DirectoryOrCreate below it
		ctx:                                    false,
		filepath.Join(ctx, "data"):             false,
		elsewhere:                              false,
		filepath.Join(root, "my-ctr-output"):   false,
	})

	if err := os.RemoveAll(output); err != nil {
		t.Fatal(err)
	}
	check("gone", map[string]bool{output: false, filepath.Join(output, "ps"): false})

	if err := os.Symlink(elsewhere, output); err != nil {
		t.Fatal(err)
	}
	check("a symlink in its place", map[string]bool{output: false, elsewhere: false, filepath.Join(output, "x"): false})

	// The grant is the path's own: a context under a symlinked directory
	// is named by its real path (the local cluster resolves it).
	link := filepath.Join(root, "link")
	if err := os.Symlink(ctx, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(output); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(output, 0o755); err != nil {
		t.Fatal(err)
	}
	rules.Outputs = []string{filepath.Join(link, "output")}
	check("named through a symlink", map[string]bool{output: false})
}

// The image table carries the build contexts' outputs, absolute paths only.
func TestImageTableBuildContextOutputs(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "images.yaml")
	if err := os.WriteFile(table, []byte("images: {}\nbuildContextOutputs: [/home/me/my-ctr/output/, /srv/b/output]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	it, err := LoadImageTable(table)
	if err != nil {
		t.Fatal(err)
	}
	if got := it.BuildContextOutputs(); len(got) != 2 || got[0] != "/home/me/my-ctr/output" || got[1] != "/srv/b/output" {
		t.Errorf("outputs %q", got)
	}
	if err := os.WriteFile(table, []byte("images: {}\nbuildContextOutputs: [my-ctr/output]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadImageTable(table); err == nil {
		t.Error("a relative output was taken")
	}
	var none *ImageTable
	if none.BuildContextOutputs() != nil {
		t.Error("no table has outputs")
	}
}
