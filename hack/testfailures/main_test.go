package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goTestJSON runs `go test -json` on a package of the given test source,
// written to a module of its own, and returns its events.
func goTestJSON(t *testing.T, source string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":      "module example.com/sample\n\ngo 1.25\n",
		"one_test.go": source,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", append([]string{"test", "-json"}, append(args, ".")...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatal(err)
	}
	return out
}

func TestSummaryNamesEachFailureAndTheTimeout(t *testing.T) {
	events := goTestJSON(t, `package sample

import "testing"

func TestFails(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		t.Log("what led to it")
		t.Error("the reason")
	})
}

func TestPasses(t *testing.T) { t.Log("nothing to see") }

func TestHangs(t *testing.T) { select {} }
`, "-timeout", "1s")
	var out bytes.Buffer
	if err := summarize(bytes.NewReader(events), &out, 10); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"--- example.com/sample TestFails/inner failed",
		"what led to it",
		"the reason",
		"--- example.com/sample ended abnormally:\n    panic: test timed out after 1s",
		"TestHangs",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"--- example.com/sample TestFails failed", "nothing to see"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("summary has %q:\n%s", unwanted, got)
		}
	}
}

func TestSummaryOfAGreenRunIsEmpty(t *testing.T) {
	events := goTestJSON(t, "package sample\n\nimport \"testing\"\n\nfunc TestPasses(t *testing.T) { t.Log(\"fine\") }\n")
	var out bytes.Buffer
	if err := summarize(bytes.NewReader(events), &out, 10); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("a green run's summary is %q, want nothing", out.String())
	}
}
