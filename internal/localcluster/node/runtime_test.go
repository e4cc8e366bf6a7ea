package node

import (
	"testing"
	"time"
)

func TestStartFailure(t *testing.T) {
	tests := []struct {
		code   int32
		ranFor time.Duration
		output string
		want   bool
	}{
		{1, 10 * time.Millisecond, "bwrap: execvp nope: No such file or directory", true},
		{1, 10 * time.Millisecond, "bwrap: Can't find source path /x: No such file or directory", true},
		{1, 10 * time.Millisecond, "bwrap: something\nand the program's own output", false},
		{2, 10 * time.Millisecond, "bwrap: execvp nope: No such file or directory", false},
		{1, time.Minute, "bwrap: execvp nope: No such file or directory", false},
		{1, 10 * time.Millisecond, "error: bad input", false},
	}
	for _, tc := range tests {
		if _, got := startFailure(tc.code, tc.ranFor, tc.output); got != tc.want {
			t.Errorf("startFailure(%d, %s, %q) = %v, want %v", tc.code, tc.ranFor, tc.output, got, tc.want)
		}
	}
}
