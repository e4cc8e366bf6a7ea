package node

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// imageFilesOf copies an entry's files as a container start does and lists
// the regular files of the copy at root.
func imageFilesOf(t *testing.T, e ImageEntry) (root string, files []string) {
	t.Helper()
	root = t.TempDir()
	for _, f := range e.Files {
		if err := copyImageFile(root, f); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, strings.TrimPrefix(p, root))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return root, files
}

func TestDockerignoreIsApplied(t *testing.T) {
	files := map[string]string{
		".dockerignore": "# what the image leaves out\n*.pyc\n**/__pycache__\n/secret.txt\ndata\n!data/keep.csv\n",
		"train.py":      "print(1)", "model.pyc": "x", "secret.txt": "s", "notes.txt": "n",
		"pkg/mod.py": "m", "pkg/__pycache__/mod.cpython-310.pyc": "c", "pkg/deep/x.pyc": "x",
		"data/keep.csv": "1", "data/big.csv": "2", "data/sub/more.csv": "3", "data/empty/": "",
	}
	ctx := testContext(t, "FROM base\nCOPY . /app/\nCOPY *.txt /txt/\nCOPY pkg /pkg\n", files)
	e, warnings, err := buildContext(ctx, noBase)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q, want none", warnings)
	}
	// Matched when a container starts: a file added since is left out too.
	if err := os.WriteFile(filepath.Join(ctx, "late.pyc"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/app/.dockerignore", "/app/Dockerfile", "/app/data/keep.csv", "/app/notes.txt",
		"/app/pkg/deep/x.pyc", // as in Docker, *.pyc is only the context's top
		"/app/pkg/mod.py", "/app/train.py",
		"/pkg/deep/x.pyc", "/pkg/mod.py",
		"/txt/notes.txt",
	}
	copied, got := imageFilesOf(t, e)
	if !slices.Equal(got, want) {
		t.Errorf("the image's files are\n  %q\nwant\n  %q", got, want)
	}
	// data is entered for keep.csv; data/sub, with nothing taken back, is not.
	for _, dir := range []string{"/app/data/sub", "/app/data/empty"} {
		if _, err := os.Stat(filepath.Join(copied, dir)); err == nil {
			t.Errorf("the image has %s, which .dockerignore excludes", dir)
		}
	}

	named := testContext(t, "FROM base\nCOPY secret.txt /x\n", files)
	if _, _, err := buildContext(named, noBase); err == nil || !strings.Contains(err.Error(), ":2: COPY secret.txt: excluded from the build context by .dockerignore") {
		t.Errorf("COPY of an ignored file: %v", err)
	}
	bad := testContext(t, "FROM base\n", map[string]string{".dockerignore": "[\n"})
	if _, _, err := buildContext(bad, noBase); err == nil || !strings.Contains(err.Error(), filepath.Join(bad, ".dockerignore")) {
		t.Errorf("a bad pattern: %v", err)
	}
}

// Dockerfile.dockerignore, beside the Dockerfile, wins over .dockerignore,
// as with docker build.
func TestDockerfileDockerignoreWins(t *testing.T) {
	ctx := testContext(t, "FROM base\nCOPY . /app/\n", map[string]string{
		".dockerignore": "a.txt\n", "Dockerfile.dockerignore": "b.txt\n.dockerignore\nDockerfile*\n", "a.txt": "a", "b.txt": "b",
	})
	e, _, err := buildContext(ctx, noBase)
	if err != nil {
		t.Fatal(err)
	}
	if _, got := imageFilesOf(t, e); !slices.Equal(got, []string{"/app/a.txt"}) {
		t.Errorf("the image's files are %q, want only /app/a.txt", got)
	}
}
