package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// trainerExitFile, in a node's log directory, records that its trainer
// ended and how. A pserver serves every trainer of the job, not only its
// pod's, so a pod whose trainer succeeded keeps its pserver until all these
// files exist in the shared output directory.
const trainerExitFile = "trainer.exit"

// clearTrainerExit removes the record a previous run of the same job left.
func clearTrainerExit(nodeDir string) error {
	if err := os.Remove(filepath.Join(nodeDir, trainerExitFile)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing the last run's %s: %w", trainerExitFile, err)
	}
	return nil
}

// recordTrainerExit writes the trainer's exit code for the other pods.
func recordTrainerExit(nodeDir string, code int) error {
	return os.WriteFile(filepath.Join(nodeDir, trainerExitFile), []byte(strconv.Itoa(code)+"\n"), 0o644)
}

// allTrainersEnded reports whether each of the job's trainers recorded its
// end in <outputDir>/node_<id>/.
func allTrainersEnded(outputDir string, trainers int) bool {
	for id := range trainers {
		if _, err := os.Stat(filepath.Join(outputDir, "node_"+strconv.Itoa(id), trainerExitFile)); err != nil {
			return false
		}
	}
	return true
}
