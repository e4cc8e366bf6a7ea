package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/paddlejob/paddlejob/internal/paddleprobe"
)

// unsupportedExitCode ends a launch whose image cannot run the job at all,
// as a shell ends a command it cannot execute.
const unsupportedExitCode = 126

// checkParameterServerRuntime asks the pserver's interpreter, before any
// process starts, whether its Paddle can run a parameter server. PyPI's CPU
// wheels from 3.1 on cannot, and a pserver would then fail deep in fleet
// with a traceback, its peers waiting for it. Only a Python command is
// asked; when the question itself fails (no paddle to import, say) the
// launch goes on and the program reports its own error.
func checkParameterServerRuntime(ctx context.Context, argv []string, dir string, env []string, log io.Writer) error {
	if len(argv) == 0 || !strings.HasPrefix(filepath.Base(argv[0]), "python") {
		return nil
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], "-c", paddleprobe.ParameterServerScript)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &stdout, &stderr
	err := cmd.Run()
	version := strings.TrimSpace(stdout.String())
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		return &ExitError{Code: unsupportedExitCode, Reason: fmt.Sprintf(
			"Paddle %s, which %s imports, has no parameter-server runtime (PyPI's CPU wheels from 3.1 on are built without it), so this pod cannot run a pserver; parameter-server jobs need an image of a Paddle release that has it, such as 2.6.2 or 3.0.0",
			version, argv[0])}
	}
	fmt.Fprintf(log, "paddlejob launch: warning: could not ask %s whether its Paddle runs a parameter server (%v); starting anyway\n%s", argv[0], err, stderr.String())
	return nil
}
