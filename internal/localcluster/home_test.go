package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A mistyped --home must not cost the user a directory: down removes, and
// up uses, only a directory up created (or an empty one).

func userDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("years of work"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDownRefusesADirectoryItDidNotCreate(t *testing.T) {
	dir := userDir(t)
	err := Down(Options{Home: dir})
	if err == nil || !strings.Contains(err.Error(), "not a local cluster's state directory") || !strings.Contains(err.Error(), "nothing was stopped or removed") {
		t.Fatalf("down: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "thesis.tex")); err != nil {
		t.Fatalf("the user's file is gone: %v", err)
	}
}

func TestUpClaimsOnlyNewOrEmptyDirectories(t *testing.T) {
	dir := userDir(t)
	err := claimHome(layout{dir})
	if err == nil || !strings.Contains(err.Error(), "holds thesis.tex") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("claiming a user's directory: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the user's directory was changed: %v", entries)
	}

	for _, home := range []string{filepath.Join(t.TempDir(), "new"), t.TempDir()} {
		if err := claimHome(layout{home}); err != nil {
			t.Fatalf("claiming %s: %v", home, err)
		}
		if !isHome(layout{home}) {
			t.Errorf("%s not marked", home)
		}
		// Claimed once, it stays claimable with the cluster's files in it.
		if err := os.WriteFile(filepath.Join(home, "kubeconfig"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := claimHome(layout{home}); err != nil {
			t.Errorf("claiming %s again: %v", home, err)
		}
		if err := Down(Options{Home: home}); err != nil {
			t.Errorf("down %s: %v", home, err)
		}
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Errorf("down left %s: %v", home, err)
		}
	}
}

// The cluster's state file alone does not make a directory a cluster's
// home: one holding a cluster.json (and a marker that is not a regular
// file) is left as it is by down and refused by up.
func TestDownAndUpRefuseADirectoryWithOnlyAStateFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		marker func(t *testing.T, dir string)
	}{
		{name: "no marker", marker: func(*testing.T, string) {}},
		{name: "a marker that is a directory", marker: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, homeMarker), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a marker that is a symlink", marker: func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(dir, homeMarker)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			state := []byte(`{"processes":[]}`)
			if err := os.WriteFile(filepath.Join(dir, "cluster.json"), state, 0o600); err != nil {
				t.Fatal(err)
			}
			tc.marker(t, dir)
			before := listing(t, dir)

			err := Down(Options{Home: dir})
			if err == nil || !strings.Contains(err.Error(), "nothing was stopped or removed") || !strings.Contains(err.Error(), "touch "+filepath.Join(dir, homeMarker)) {
				t.Errorf("down: %v, want a refusal saying how to mark an older cluster's directory", err)
			}
			err = claimHome(layout{dir})
			if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
				t.Errorf("up: %v, want a refusal", err)
			}
			if after := listing(t, dir); after != before {
				t.Errorf("the directory changed:\n%s\nwant\n%s", after, before)
			}
			if got, err := os.ReadFile(filepath.Join(dir, "cluster.json")); err != nil || string(got) != string(state) {
				t.Errorf("cluster.json is now %q (%v)", got, err)
			}
		})
	}
}

// listing is a directory's entries with their kinds and sizes.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s %s %d\n", rel, fi.Mode().Type(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
