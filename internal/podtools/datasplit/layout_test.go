package datasplit

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunWritesPerTrainerLayout(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	write(t, filepath.Join(in, "train.txt"), "r0\nr1\nr2\nr3\nr4\n")
	sources, err := FileSources([]string{filepath.Join(in, "train.txt")}, "")
	if err != nil {
		t.Fatal(err)
	}
	// Other things in the job directory (the tutorial's quick_start, output) stay.
	write(t, filepath.Join(out, "paddle-cluster-job", "quick_start", "trainer_config.py"), "cfg\n")

	parts, err := Run(Options{Sources: sources, OutDir: out, Job: "paddle-cluster-job", Parts: 3, Mode: Contiguous})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(out, "paddle-cluster-job")
	want := []Part{
		{Path: filepath.Join(root, "0", "data", "train.txt"), PartStats: PartStats{Lines: 2, Bytes: 6}},
		{Path: filepath.Join(root, "1", "data", "train.txt"), PartStats: PartStats{Lines: 2, Bytes: 6}},
		{Path: filepath.Join(root, "2", "data", "train.txt"), PartStats: PartStats{Lines: 1, Bytes: 3}},
	}
	if !reflect.DeepEqual(parts, want) {
		t.Errorf("Run() = %+v, want %+v", parts, want)
	}
	for i, content := range []string{"r0\nr1\n", "r2\nr3\n", "r4\n"} {
		if got := read(t, want[i].Path); got != content {
			t.Errorf("part %d = %q, want %q", i, got, content)
		}
	}
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"0", "1", "2", "quick_start"}; !reflect.DeepEqual(names, want) {
		t.Errorf("%s holds %v, want %v (no staging left behind)", root, names, want)
	}
}

func TestRunRefusesToOverwriteUnlessForced(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	write(t, filepath.Join(in, "a.txt"), "1\n2\n3\n4\n")
	sources, err := FileSources([]string{in}, "")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Sources: sources, OutDir: out, Job: "job", Parts: 4}
	if _, err := Run(opts); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(out, "job", "1", "notes.txt"), "kept\n")

	opts.Parts = 2
	_, err = Run(opts)
	if want := "already holds split data (0/data, 1/data, 2/data, 3/data); pass --force"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second Run() error = %v, want one containing %q", err, want)
	}
	if got := read(t, filepath.Join(out, "job", "3", "data", "a.txt")); got != "4\n" {
		t.Errorf("a refused run changed part 3 to %q", got)
	}

	opts.Force = true
	if _, err := Run(opts); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(out, "job", "0", "data", "a.txt")); got != "1\n3\n" {
		t.Errorf("part 0 = %q after --force", got)
	}
	for _, stale := range []string{"2", "3"} {
		if _, err := os.Stat(filepath.Join(out, "job", stale)); !os.IsNotExist(err) {
			t.Errorf("stale part %s survived --force: %v", stale, err)
		}
	}
	if got := read(t, filepath.Join(out, "job", "1", "notes.txt")); got != "kept\n" {
		t.Errorf("--force removed a file that was not a part")
	}
}

// Without --job the parts go straight into --out, as the three-node tutorial's data Job
// (OUT_DIR=/home/work/mfs/paddle-cluster-job) wants.
func TestRunWithoutJob(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	write(t, filepath.Join(in, "x"), "1\n2\n")
	sources, _ := FileSources([]string{in}, "")
	if _, err := Run(Options{Sources: sources, OutDir: out, Parts: 2, FileName: "train.txt"}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(out, "1", "data", "train.txt")); got != "2\n" {
		t.Errorf("part 1 = %q", got)
	}
}

func TestRunValidates(t *testing.T) {
	sources := stringSources("a\n")
	tests := []struct {
		opts Options
		want string
	}{
		{Options{Sources: sources, Parts: 2}, "--out (or OUT_DIR) is required"},
		{Options{Sources: sources, OutDir: "o", Parts: 0}, "--parts (or SPLIT_COUNT) must be at least 1"},
		{Options{Sources: sources, OutDir: "o", Parts: 1, Job: "../x"}, `--job="../x" must be a plain name`},
		{Options{OutDir: "o", Parts: 1}, "--input is required"},
		{Options{Sources: sources, OutDir: "o", Parts: 1, Mode: "shuffle"}, `--mode="shuffle"`},
		{Options{Sources: sources, OutDir: "o", Parts: 1, FileName: "a/b"}, `--name="a/b"`},
	}
	for _, tt := range tests {
		if _, err := Run(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%+v) error = %v, want one containing %q", tt.opts, err, tt.want)
		}
	}
}

func TestFileSourcesOrder(t *testing.T) {
	in := t.TempDir()
	for _, name := range []string{"b.txt", "a.txt", "sub/c.txt", "sub/0.txt"} {
		write(t, filepath.Join(in, name), "x\n")
	}
	if err := os.MkdirAll(filepath.Join(in, "out", "job", "0", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(in, "out", "job", "0", "data", "a.txt"), "an earlier part\n")
	sources, err := FileSources([]string{filepath.Join(in, "b.txt"), in}, filepath.Join(in, "out", "job"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sources {
		rel, _ := filepath.Rel(in, s.Name)
		got = append(got, rel)
	}
	want := []string{"b.txt", "a.txt", "b.txt", "sub/0.txt", "sub/c.txt"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sources = %v, want %v", got, want)
	}
	if _, err := FileSources([]string{filepath.Join(in, "missing")}, ""); err == nil || !strings.Contains(err.Error(), "--input") {
		t.Errorf("a missing input: error = %v, want one naming --input", err)
	}
}
