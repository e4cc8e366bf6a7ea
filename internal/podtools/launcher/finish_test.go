package launcher

import (
	"path/filepath"
	"testing"
)

func TestTrainerExitRecords(t *testing.T) {
	output := t.TempDir()
	node := func(id string) string { return filepath.Join(output, "node_"+id) }
	for _, id := range []string{"0", "1"} {
		writeFile(t, filepath.Join(node(id), "train.log"), "")
	}
	if allTrainersEnded(output, 2) {
		t.Fatal("ended before any trainer recorded its end")
	}
	if err := recordTrainerExit(node("0"), 0); err != nil {
		t.Fatal(err)
	}
	if allTrainersEnded(output, 2) {
		t.Fatal("ended with trainer 1 still running")
	}
	if err := recordTrainerExit(node("1"), 3); err != nil {
		t.Fatal(err)
	}
	if !allTrainersEnded(output, 2) {
		t.Fatal("not ended after both trainers recorded their end")
	}
	if got := readFile(t, filepath.Join(node("1"), trainerExitFile)); got != "3\n" {
		t.Errorf("trainer 1's record = %q, want its exit code", got)
	}
	// A new run starts from a clean slate, and clearing twice is fine.
	for range 2 {
		if err := clearTrainerExit(node("1")); err != nil {
			t.Fatal(err)
		}
	}
	if allTrainersEnded(output, 2) {
		t.Error("a cleared record still counts")
	}
}
