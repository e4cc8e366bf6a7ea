package launcher

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePython writes an interpreter stand-in that answers the probe as the
// body says.
func fakePython(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckParameterServerRuntime(t *testing.T) {
	for _, tc := range []struct {
		name        string
		argv        func(t *testing.T) []string
		wantCode    int // 0: the launch goes on
		wantMessage string
	}{
		{name: "has the runtime", argv: func(t *testing.T) []string { return []string{fakePython(t, "echo 3.0.0")} }},
		{name: "lacks it", argv: func(t *testing.T) []string { return []string{fakePython(t, "echo 3.3.1; exit 3"), "train.py"} },
			wantCode: unsupportedExitCode, wantMessage: "Paddle 3.3.1, which"},
		{name: "the probe fails otherwise", argv: func(t *testing.T) []string { return []string{fakePython(t, "echo no paddle >&2; exit 1")} },
			wantMessage: "warning: could not ask"},
		{name: "not a Python command", argv: func(*testing.T) []string { return []string{"sh", "-c", "exit 3"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			err := checkParameterServerRuntime(context.Background(), tc.argv(t), t.TempDir(), os.Environ(), &log)
			if code := exitCodeOf(t, err); code != tc.wantCode {
				t.Fatalf("err = %v (code %d), want code %d", err, code, tc.wantCode)
			}
			got := log.String()
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.wantMessage) {
				t.Errorf("said %q, want %q", got, tc.wantMessage)
			}
		})
	}
}
