package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// Steps writing side by side, a byte at a time, never mix within a line.
func TestLineWriterKeepsLinesWhole(t *testing.T) {
	var buf bytes.Buffer
	out := &syncWriter{w: &buf}
	var wg sync.WaitGroup
	for _, step := range []string{"a", "b", "c"} {
		w := out.prefixed("  ")
		wg.Go(func() {
			for i := range 50 {
				for _, c := range []byte(fmt.Sprintf("%s line %d\n", step, i)) {
					if _, err := w.Write([]byte{c}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 150 {
		t.Fatalf("%d lines; want 150", len(lines))
	}
	for _, l := range lines {
		var step string
		var i int
		if n, err := fmt.Sscanf(l, "  %s line %d", &step, &i); n != 2 || err != nil || l != fmt.Sprintf("  %s line %d", step, i) {
			t.Errorf("mixed line %q", l)
		}
	}
}

// A step says how long it took when it built something, that it was
// cached when it said nothing, and when it failed.
func TestTimedSaysWhatTheStepDid(t *testing.T) {
	var buf bytes.Buffer
	out := &syncWriter{w: &buf}
	_ = timed(out, "etcd", func(log io.Writer) error { fmt.Fprintln(log, "building etcd..."); return nil })
	_ = timed(out, "CoreDNS", func(io.Writer) error { return nil })
	if err := timed(out, "kube-apiserver", func(io.Writer) error { return errors.New("no go") }); err == nil {
		t.Error("the step's error is lost")
	}
	want := "  building etcd...\n  etcd: ready in 0s\n  CoreDNS: cached\n  kube-apiserver: failed after 0s\n"
	if buf.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", buf.String(), want)
	}
}
