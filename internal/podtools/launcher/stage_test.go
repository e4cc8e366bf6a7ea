package launcher

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStageData(t *testing.T) {
	tests := []struct {
		name     string
		layout   string // where trainer 1's data is, relative to the job dir
		mode     DataMode
		wantWarn bool
	}{
		{name: "<id>/data layout, linked", layout: "1/data", mode: DataLink},
		{name: "<id>/data layout, copied", layout: "1/data", mode: DataCopy},
		{name: "data/<id> layout", layout: "data/1", mode: DataLink},
		{name: "bare trainer directory", layout: "1", mode: DataCopy},
		{name: "no data: a warning", mode: DataLink, wantWarn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobDir, workdir := t.TempDir(), t.TempDir()
			if tt.layout != "" {
				writeFile(t, filepath.Join(jobDir, tt.layout, "train.txt"), "1,2,3\n")
				writeFile(t, filepath.Join(jobDir, tt.layout, "sub", "more.txt"), "4\n")
			}
			writeFile(t, filepath.Join(jobDir, "0", "data", "train.txt"), "trainer 0's\n")
			var log bytes.Buffer
			if err := stageData(jobDir, 1, workdir, tt.mode, &log); err != nil {
				t.Fatal(err)
			}
			if tt.wantWarn {
				if !strings.Contains(log.String(), "warning: no data directory for trainer 1") {
					t.Errorf("log %q has no warning", log.String())
				}
				if _, err := os.Stat(filepath.Join(workdir, "data")); !os.IsNotExist(err) {
					t.Errorf("./data exists without data: %v", err)
				}
				return
			}
			if got := readFile(t, filepath.Join(workdir, "data", "train.txt")); got != "1,2,3\n" {
				t.Errorf("./data/train.txt = %q", got)
			}
			if got := readFile(t, filepath.Join(workdir, "data", "sub", "more.txt")); got != "4\n" {
				t.Errorf("./data/sub/more.txt = %q", got)
			}
			info, err := os.Lstat(filepath.Join(workdir, "data", "train.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if isLink := info.Mode()&os.ModeSymlink != 0; isLink != (tt.mode == DataLink) {
				t.Errorf("./data/train.txt is a symlink: %v, with mode %s", isLink, tt.mode)
			}
		})
	}
}

// A copy after a linked run must replace the links, not write through them
// into the shared volume.
func TestStageCopyAfterLinkLeavesTheSourceAlone(t *testing.T) {
	jobDir, workdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(jobDir, "0", "data", "d", "f.txt"), "source\n")
	var log bytes.Buffer
	if err := stageData(jobDir, 0, workdir, DataLink, &log); err != nil {
		t.Fatal(err)
	}
	if err := stageData(jobDir, 0, workdir, DataCopy, &log); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(workdir, "data", "d", "f.txt"), "changed in the container\n")
	if got := readFile(t, filepath.Join(jobDir, "0", "data", "d", "f.txt")); got != "source\n" {
		t.Errorf("the shared source changed to %q", got)
	}
}

func TestStageConfig(t *testing.T) {
	jobDir, workdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(jobDir, "recommendation", "trainer_config.py"), "config\n")
	var log bytes.Buffer
	if err := stageConfig(jobDir, "recommendation", workdir, DataCopy, &log); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(workdir, "trainer_config.py")); got != "config\n" {
		t.Errorf("trainer_config.py = %q", got)
	}
	err := stageConfig(jobDir, "missing", workdir, DataCopy, &log)
	if err == nil || !strings.Contains(err.Error(), "TRAIN_CONFIG_DIR=missing") {
		t.Errorf("missing config dir: error = %v, want one naming TRAIN_CONFIG_DIR", err)
	}
}

func TestParseDataMode(t *testing.T) {
	for _, s := range []string{"link", "copy"} {
		if m, err := ParseDataMode(s); err != nil || string(m) != s {
			t.Errorf("ParseDataMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseDataMode("rsync"); err == nil || !strings.Contains(err.Error(), "--data-mode") {
		t.Errorf("ParseDataMode(rsync) error = %v, want one naming --data-mode", err)
	}
}
