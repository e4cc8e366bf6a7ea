package launcher

import (
	"bytes"
	"strings"
	"testing"
)

func TestPrefixWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{name: "whole lines", writes: []string{"a\nb\n"}, want: "[t] a\n[t] b\n"},
		{name: "a line in pieces", writes: []string{"he", "llo\nwor", "ld\n"}, want: "[t] hello\n[t] world\n"},
		{name: "unterminated last line", writes: []string{"a\nb"}, want: "[t] a\n[t] b\n"},
		{name: "empty lines kept", writes: []string{"\n\n"}, want: "[t] \n[t] \n"},
		{name: "nothing", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newPrefixWriter(&syncWriter{w: &out}, "[t] ")
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tt.want {
				t.Errorf("output = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrefixWriterBoundsAnEndlessLine(t *testing.T) {
	var out bytes.Buffer
	w := newPrefixWriter(&syncWriter{w: &out}, "[t] ")
	chunk := strings.Repeat("x", 4096)
	for range 2 * maxPendingLine / len(chunk) {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.pending) >= maxPendingLine {
		t.Errorf("%d bytes held back, want fewer than %d", len(w.pending), maxPendingLine)
	}
	if got := strings.Count(out.String(), "[t] "); got != 2 {
		t.Errorf("an endless line came out in %d pieces, want 2", got)
	}
}
