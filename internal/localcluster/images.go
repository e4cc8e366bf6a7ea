package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/internal/node"
)

// The node has no image registry: its image table says what a container of
// an image runs. The built-in entries run the project's examples for the
// images of seed 004's examples, so those YAMLs run as written.
const examplesBinary = "paddlejob-examples"

// builtinImages maps images to the examples binary at examples.
func builtinImages(examples, paddlejob string) map[string]node.ImageEntry {
	return map[string]node.ImageEntry{
		// Seed 004 example 1 (PS mode): the image's entrypoint is train.py.
		"registry.baidubce.com/paddle-operator/demo-wide-and-deep": {Command: []string{examples, "wide-and-deep"}},
		// Seed 004 example 2 (collective): its YAML runs paddle.distributed.launch.
		"registry.baidubce.com/paddle-operator/demo-resnet": {Command: []string{examples, "collective"}, OverrideCommand: true},
		// The examples by name, subcommand in args.
		"paddlejob/examples": {Command: []string{examples}},
		// The operator's image, as config/ and the Helm chart deploy it.
		"ghcr.io/paddlejob/paddlejob-operator": {Command: []string{paddlejob, "operator"}},
		// The launcher of plain batch/v1 Jobs (seeds 000, 001, 003).
		"paddlejob/launcher": {Command: []string{paddlejob, "launch"}},
		// Seed 001's multi-node Job, with [YOUR_REPO] replaced by paddlejob:
		// the launcher with the example's legacy pserver and trainer, reading
		// the share `paddlejob data split` wrote as data/train.txt.
		"paddlejob/paddle:mypaddle": {OverrideCommand: true, WorkingDir: "/tmp", Command: []string{paddlejob, "launch",
			"--pserver-cmd", examples + " pserver", "--trainer-cmd", examples + " train --data=data/train.txt"}},
		// Seed 000's single-node Job: the trainer alone, saving where the
		// tutorial mounts its output.
		"mypaddle/paddle:quickstart": {OverrideCommand: true, WorkingDir: "/tmp", Command: []string{paddlejob, "launch", "--no-pserver",
			"--trainer-cmd", examples + " train --local=1 --num_passes=3 --save_dir=/root/paddle/demo/quick_start/output"}},
		// Seed 002's runtime image: the PS example, its role from the environment.
		"yancey1989/paddle-job": {OverrideCommand: true, Command: []string{examples, "wide-and-deep", "--rows=20000", "--passes=2"}},
	}
}

// writeImageTable writes the node's image table: the built-in entries, then
// the user's table over them.
func writeImageTable(path, paddlejob, userTable string) error {
	examples := findExamples(paddlejob)
	images := builtinImages(examples, paddlejob)
	if userTable != "" {
		data, err := os.ReadFile(userTable)
		if err != nil {
			return fmt.Errorf("reading the image table %s: %w", userTable, err)
		}
		var user struct {
			Images map[string]node.ImageEntry `json:"images"`
		}
		if err := yaml.UnmarshalStrict(data, &user); err != nil {
			return fmt.Errorf("image table %s: %w", userTable, err)
		}
		for k, v := range user.Images {
			images[k] = v
		}
	}
	data, err := yaml.Marshal(map[string]any{"images": images})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// findExamples locates the examples binary: beside paddlejob, else on PATH.
// When it is missing the entries still name it, and a pod of those images
// fails with the node's message about the missing command.
func findExamples(paddlejob string) string {
	beside := filepath.Join(filepath.Dir(paddlejob), examplesBinary)
	if _, err := os.Stat(beside); err == nil {
		return beside
	}
	if p, err := exec.LookPath(examplesBinary); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return beside
}
