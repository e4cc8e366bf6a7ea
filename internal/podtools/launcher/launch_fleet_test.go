package launcher

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestLaunchFleetSingleNodeWithoutCluster(t *testing.T) {
	opts := DefaultOptions()
	opts.WorkDir = t.TempDir()
	opts.ExtraArgs = []string{"sh", "-c", `echo "$TRAINING_ROLE $*" ${PADDLE_JOB_ID-no-job} ${PADDLE_OUTPUT_DIR-no-output}`, "train.py", "--save_dir=./output"}
	opts.Getenv = func(string) string { return "" }
	var stdout, stderr bytes.Buffer
	opts.Stdout, opts.Stderr = &stdout, &stderr
	if err := Run(context.Background(), opts); err != nil {
		t.Fatalf("Run() = %v\nstderr:\n%s", err, &stderr)
	}
	if got, want := readFile(t, filepath.Join(opts.WorkDir, "train.log")), "TRAINER --save_dir=./output no-job no-output\n"; got != want {
		t.Errorf("train.log = %q, want %q", got, want)
	}
}

// Fleet mode needs a program; that is said before anything else happens.
func TestLaunchFleetNeedsAProgram(t *testing.T) {
	opts := DefaultOptions()
	opts.WorkDir = t.TempDir()
	opts.Getenv = func(k string) string { return threeNodeJobEnv[k] }
	opts.Stderr = &bytes.Buffer{}
	err := Run(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "paddlejob launch -- python train.py") {
		t.Fatalf("Run() = %v, want an error asking for the program", err)
	}
}

func TestLaunchFleetReportsEnvironmentErrors(t *testing.T) {
	opts := DefaultOptions()
	opts.WorkDir = t.TempDir()
	opts.ExtraArgs = []string{"python", "train.py"}
	env := map[string]string{"CONF_PADDLE_PORT": "7164", "CONF_PADDLE_PORTS_NUM": "two"}
	opts.Getenv = func(k string) string { return env[k] }
	opts.Stderr = &bytes.Buffer{}
	err := Run(context.Background(), opts)
	for _, want := range []string{"JOB_NAME is not set", "JOB_PATH is not set", `CONF_PADDLE_PORTS_NUM="two"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run() error = %v, want one containing %q", err, want)
		}
	}
}
