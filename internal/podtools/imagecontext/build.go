package imagecontext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// ErrNoDockerEngine means no Docker engine answered; the context is still
// usable elsewhere.
var ErrNoDockerEngine = errors.New("no Docker engine is available")

// Build runs `docker build -t image dir` when a Docker engine answers
// `docker info`, streaming the build's output. Without one it returns an
// error wrapping ErrNoDockerEngine.
func Build(ctx context.Context, dir, image string, stdout, stderr io.Writer) error {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return fmt.Errorf("%w: docker is not on PATH", ErrNoDockerEngine)
	}
	var infoOut bytes.Buffer
	info := exec.CommandContext(ctx, docker, "info")
	info.Stdout, info.Stderr = &infoOut, &infoOut
	if err := info.Run(); err != nil {
		return fmt.Errorf("%w: `docker info` failed (%v): %s", ErrNoDockerEngine, err, lastLine(infoOut.String()))
	}
	build := exec.CommandContext(ctx, docker, "build", "-t", image, dir)
	build.Stdout, build.Stderr = stdout, stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("docker build -t %s %s: %w", image, dir, err)
	}
	return nil
}

// lastLine is the last non-empty line of s, where docker says what is wrong.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
