package ctr

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	st := randomState(smallConfig)
	ck := &Checkpoint{Pass: 3, Seed: 42, Loss: 0.5, TestAUC: 0.75, State: st}
	saved, err := SaveCheckpoint(dir, ck)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "pass-00003"); saved != want {
		t.Fatalf("saved to %s, want %s", saved, want)
	}
	for _, f := range []string{"meta.json", "params.bin", "adagrad.bin", "done"} {
		if _, err := os.Stat(filepath.Join(saved, f)); err != nil {
			t.Error(err)
		}
	}
	latest, err := LatestCheckpoint(dir)
	if err != nil || latest != saved {
		t.Fatalf("LatestCheckpoint = %q, %v; want %q", latest, err, saved)
	}
	got, err := LoadCheckpoint(latest)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pass != 3 || got.Seed != 42 || got.Loss != 0.5 || got.TestAUC != 0.75 || got.Config != smallConfig {
		t.Errorf("metadata read back as %+v", got)
	}
	if !reflect.DeepEqual(got.State, st) {
		t.Error("state read back differs")
	}
}

func TestLatestCheckpointSkipsIncompleteOnes(t *testing.T) {
	dir := t.TempDir()
	st := NewState(smallConfig, 1)
	for _, pass := range []int{0, 1, 2} {
		if _, err := SaveCheckpoint(dir, &Checkpoint{Pass: pass, State: st}); err != nil {
			t.Fatal(err)
		}
	}
	// Pass 2 crashed before done; pass 10 never got further than its dir.
	os.Remove(filepath.Join(PassDir(dir, 2), "done"))
	os.MkdirAll(PassDir(dir, 10), 0o755)
	os.MkdirAll(filepath.Join(dir, "pass-notanumber"), 0o755)

	latest, err := LatestCheckpoint(dir)
	if err != nil || latest != PassDir(dir, 1) {
		t.Fatalf("LatestCheckpoint = %q, %v; want pass 1", latest, err)
	}
	if _, err := LoadCheckpoint(PassDir(dir, 2)); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("loading a checkpoint without done: error %v", err)
	}
	if latest, err := LatestCheckpoint(filepath.Join(dir, "missing")); latest != "" || err != nil {
		t.Errorf("in a missing directory: %q, %v", latest, err)
	}
}

func TestLoadCheckpointChecksSizes(t *testing.T) {
	dir := t.TempDir()
	saved, err := SaveCheckpoint(dir, &Checkpoint{Pass: 0, State: NewState(smallConfig, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(saved, "params.bin"), make([]byte, 16), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint(saved); err == nil || !strings.Contains(err.Error(), "params.bin has 16 bytes") {
		t.Fatalf("error = %v", err)
	}
}

func TestLatestCheckpointBefore(t *testing.T) {
	dir := t.TempDir()
	st := NewState(smallConfig, 1)
	for _, pass := range []int{0, 1, 2, 3} {
		if _, err := SaveCheckpoint(dir, &Checkpoint{Pass: pass, State: st}); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(PassDir(dir, 2), "done"))
	tests := []struct {
		before int
		want   string
	}{
		{0, ""},
		{1, PassDir(dir, 0)},
		{3, PassDir(dir, 1)}, // pass 2 is incomplete
		{4, PassDir(dir, 3)},
		{100, PassDir(dir, 3)},
	}
	for _, tt := range tests {
		if got, err := LatestCheckpointBefore(dir, tt.before); err != nil || got != tt.want {
			t.Errorf("LatestCheckpointBefore(%d) = %q, %v; want %q", tt.before, got, err, tt.want)
		}
	}
}
