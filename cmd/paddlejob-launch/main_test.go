package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/podtools/launcher"
)

// run runs the binary's command tree with args in a fresh directory.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	t.Chdir(t.TempDir())
	t.Setenv("JOB_NAME", "") // a lone trainer: no API server
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// The command lines of docs/launcher.md, under this binary's name and as
// the CLI's (the binary copied into an image as paddlejob).
func TestTheInPodCommandLinesRun(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int // the launch's exit code
	}{
		{"the launcher", []string{"--no-pserver", "--", "sh", "-c", "exit 0"}, 0},
		{"the launcher, as paddlejob launch", []string{"launch", "--no-pserver", "--", "sh", "-c", "exit 0"}, 0},
		{"the trainer's exit code", []string{"--no-pserver", "--", "sh", "-c", "exit 3"}, 3},
		{"the trainer's exit code, as paddlejob launch", []string{"launch", "--no-pserver", "--", "sh", "-c", "exit 3"}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			var exit *launcher.ExitError
			switch {
			case tt.code == 0 && err != nil:
				t.Fatalf("%v\n%s", err, out)
			case tt.code != 0 && (!errors.As(err, &exit) || exit.Code != tt.code):
				t.Fatalf("error %v; want the trainer's exit code %d\n%s", err, tt.code, out)
			}
		})
	}
}

func TestAProgramBeforeTheDashIsNamed(t *testing.T) {
	if _, err := run(t, "python", "train.py"); err == nil || !strings.Contains(err.Error(), `unexpected argument "python": the program and its arguments go after --`) {
		t.Fatalf("error %v; want one saying the program goes after --", err)
	}
}

// The three-node tutorial's data Job runs `data split` in the image.
func TestDataSplitWritesOnePartPerTrainer(t *testing.T) {
	input := filepath.Join(t.TempDir(), "train.txt")
	if err := os.WriteFile(input, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if log, err := run(t, "data", "split", "--input", input, "--out", out, "--job", "j", "--parts", "2"); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	for part, want := range []string{"a\nc\n", "b\n"} {
		got, err := os.ReadFile(filepath.Join(out, "j", string(rune('0'+part)), "data", "train.txt"))
		if err != nil || string(got) != want {
			t.Errorf("part %d: %q, %v; want %q", part, got, err, want)
		}
	}
}

// The binary holds the in-pod tools only: none of the CLI's cluster side,
// which is what makes it a fraction of paddlejob's size.
func TestTheBinaryLinksNoClusterSide(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"/internal/operator", "/internal/localcluster", "/internal/dashboard", "sigs.k8s.io/controller-runtime", "k8s.io/apiserver"} {
			if strings.Contains(pkg, banned) {
				t.Errorf("paddlejob-launch links %s", pkg)
			}
		}
	}
}

// The binary every pod runs reads pods and Jobs through REST clients of
// those two API groups: client-go's clientsets (typed ones too) register
// every API group and would put them all in it (docs/benchmarks.md has the
// sizes).
func TestLauncherHoldsNoClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "k8s.io/client-go/kubernetes/scheme" || strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes/typed/") {
			t.Errorf("paddlejob-launch depends on %s", pkg)
		}
	}
}
