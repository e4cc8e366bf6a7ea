package paddleruntime

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestManifestRoundTrip(t *testing.T) {
	dir, m := fakeRuntime(t)
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"format": 2`, `"paddleVersion": "3.0.0"`, `"parameterServer": true`, `"hostPaths": [`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("%s lacks %s:\n%s", ManifestName, field, b)
		}
	}
	// Through a symlink too, as Ensure loads the published key.
	link := filepath.Join(tempDir(t), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, link} {
		rt, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rt, m.runtime()) || rt.Python != filepath.Join(dir, "bin", "python3") || len(rt.HostPaths) != 2 {
			t.Errorf("Load(%s) = %+v; want %+v", path, rt, m.runtime())
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string, m *manifest)
		want   string
	}{
		{"no manifest", func(t *testing.T, dir string, _ *manifest) {
			os.Remove(filepath.Join(dir, ManifestName))
		}, "not a Paddle runtime installed by paddlejob"},
		{"unreadable manifest", func(t *testing.T, dir string, _ *manifest) {
			os.WriteFile(filepath.Join(dir, ManifestName), []byte("{"), 0o644)
		}, "unreadable"},
		{"another format", func(t *testing.T, dir string, m *manifest) {
			m.Format = 99
			writeManifest(dir, m)
		}, "has format 99"},
		{"moved", func(t *testing.T, dir string, m *manifest) {
			m.Dir = "/elsewhere"
			writeManifest(dir, m)
		}, "was installed at /elsewhere: a virtual environment cannot move"},
		{"base interpreter removed", func(t *testing.T, dir string, m *manifest) {
			os.RemoveAll(m.HostPaths[1])
		}, "its python does not resolve"},
		{"host path gone", func(t *testing.T, dir string, m *manifest) {
			m.HostPaths = append(m.HostPaths, "/nonexistent/prefix")
			writeManifest(dir, m)
		}, "host path /nonexistent/prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, m := fakeRuntime(t)
			tt.break_(t, dir, m)
			if rt, err := Load(dir); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %+v, %v; want an error containing %q", rt, err, tt.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Load of a missing directory succeeded")
	}
}
