package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// TestPythonSDK runs the Python SDK's end-to-end tests (python/tests/e2e)
// against this suite's cluster: hack/test-python.sh builds the wheel,
// installs it into a fresh venv and runs pytest, whose client uses the
// current context of $KUBECONFIG, as kubectl would: this suite's cluster.
// They submit the paddle.job SDK's word2vec job (real Paddle, 2 pservers, 3 trainers
// reading their shards with the SDK's dist_reader) and scale another job.
// pytest's output streams to stderr as it runs.
func TestPythonSDK(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(testenv.RepoRoot(), "hack", "test-python.sh"), "e2e", "-v", "-s",
		// A test stuck this long dumps every thread's stack.
		"-o", "faulthandler_timeout=360")
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+cluster.Kubeconfig(),
		"PADDLEJOB_BIN="+filepath.Join(binDir, "paddlejob"),
	)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("python/tests/e2e ran in %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("the Python SDK's end-to-end tests failed: %v (their output is above)", err)
	}
}
