package localcluster

import (
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
