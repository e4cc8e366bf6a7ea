package imagecontext

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDocker puts a `docker` script on PATH (alone) that answers `info`
// with infoExit and records the arguments of everything else.
func fakeDocker(t *testing.T, infoExit string) (argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = info ]; then echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2; exit " + infoExit + "; fi\n" +
		"echo \"$@\" > " + argsFile + "\necho building\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/bin"+string(os.PathListSeparator)+"/usr/bin")
	return argsFile
}

func TestBuildWithoutDockerOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Build(context.Background(), "ctx", "paddle-job", &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.Is(err, ErrNoDockerEngine) || !strings.Contains(err.Error(), "docker is not on PATH") {
		t.Errorf("Build() = %v, want ErrNoDockerEngine", err)
	}
}

func TestBuildWithoutEngine(t *testing.T) {
	argsFile := fakeDocker(t, "1")
	err := Build(context.Background(), "ctx", "paddle-job", &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.Is(err, ErrNoDockerEngine) || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
		t.Errorf("Build() = %v, want ErrNoDockerEngine with docker's reason", err)
	}
	if _, err := os.Stat(argsFile); !errors.Is(err, os.ErrNotExist) {
		t.Error("docker build ran without an engine")
	}
}

func TestBuildRunsDockerBuild(t *testing.T) {
	argsFile := fakeDocker(t, "0")
	var stdout bytes.Buffer
	if err := Build(context.Background(), "/tmp/ctx", "yancey1989/paddle-job", &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := "build -t yancey1989/paddle-job /tmp/ctx\n"; string(got) != want {
		t.Errorf("docker was run with %q, want %q", got, want)
	}
	if stdout.String() != "building\n" {
		t.Errorf("the build's output was not passed on: %q", stdout.String())
	}
}
