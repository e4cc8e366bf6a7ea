package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

var logStart = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// writeTestLog writes lines to a log, one second apart, and closes it.
func writeTestLog(t *testing.T, path string, writes ...[2]string) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(logStart)
	l, err := createContainerLog(path, clk)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if _, err := l.writer(w[0]).Write([]byte(w[1])); err != nil {
			t.Fatal(err)
		}
		clk.SetTime(clk.Now().Add(time.Second))
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
}

func TestContainerLogFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeTestLog(t, path, [2]string{streamStdout, "one\ntwo\n"}, [2]string{streamStderr, "partial"}, [2]string{streamStdout, " line\n"})
	got, _ := os.ReadFile(path)
	// A line is recorded once it ends (the stderr line never does: it is
	// recorded, partial, when the log closes), so streams never cut into
	// each other's lines.
	want := "2024-05-01T12:00:00Z stdout F one\n" +
		"2024-05-01T12:00:00Z stdout F two\n" +
		"2024-05-01T12:00:02Z stdout F  line\n" +
		"2024-05-01T12:00:03Z stderr P partial\n"
	if string(got) != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
}

// A line longer than maxLineBytes is recorded in partial records of that
// size, then its end as a full one; read back it is the one line.
func TestLongLineIsRecordedInParts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	long := strings.Repeat("x", maxLineBytes+10)
	writeTestLog(t, path, [2]string{streamStdout, long[:100]}, [2]string{streamStdout, long[100:] + "\n"})
	got, _ := os.ReadFile(path)
	records := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(records) != 2 || !strings.HasPrefix(records[0], "2024-05-01T12:00:01Z stdout P ") || !strings.HasPrefix(records[1], "2024-05-01T12:00:01Z stdout F ") ||
		len(strings.Fields(records[0])[3]) != maxLineBytes || len(strings.Fields(records[1])[3]) != 10 {
		t.Fatalf("records: %d, first %.40q, last %.40q; want a partial one of %d bytes and a full one of 10", len(records), records[0], records[len(records)-1], maxLineBytes)
	}
	var out bytes.Buffer
	if err := copyLog(context.Background(), path, nil, api.ContainerLogOpts{}, logStart.Add(time.Minute), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != long+"\n" {
		t.Errorf("read back %d bytes, want the line of %d and its newline", out.Len(), len(long))
	}
}

func TestCopyLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeTestLog(t, path, [2]string{streamStdout, "a\n"}, [2]string{streamStdout, "b\n"}, [2]string{streamStderr, "c"}, [2]string{streamStdout, "d\n"})
	now := logStart.Add(time.Minute)
	tests := []struct {
		name string
		opts api.ContainerLogOpts
		want string
	}{
		{"all", api.ContainerLogOpts{}, "a\nb\nd\nc"},
		{"tail", api.ContainerLogOpts{Tail: 2}, "d\nc"},
		{"tail beyond the start", api.ContainerLogOpts{Tail: 10}, "a\nb\nd\nc"},
		{"timestamps", api.ContainerLogOpts{Tail: 2, Timestamps: true}, "2024-05-01T12:00:03Z d\n2024-05-01T12:00:04Z c"},
		{"since time", api.ContainerLogOpts{SinceTime: logStart.Add(time.Second)}, "b\nd\nc"},
		{"since seconds", api.ContainerLogOpts{SinceSeconds: 57}, "d\nc"},
		{"limit bytes", api.ContainerLogOpts{LimitBytes: 3}, "a\nb"},
		{"follow an ended log", api.ContainerLogOpts{Follow: true}, "a\nb\nd\nc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := copyLog(context.Background(), path, nil, tc.opts, now, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func TestCopyLogFollowsUntilTheRunEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l, err := createContainerLog(path, clocktesting.NewFakePassiveClock(logStart))
	if err != nil {
		t.Fatal(err)
	}
	out := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- copyLog(context.Background(), path, l, api.ContainerLogOpts{Follow: true}, logStart, out)
	}()

	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for out.String() != want {
			if time.Now().After(deadline) {
				t.Fatalf("followed %q, want %q", out.String(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	l.writer(streamStdout).Write([]byte("first\n"))
	waitFor("first\n")
	l.writer(streamStdout).Write([]byte("second\n"))
	waitFor("first\nsecond\n")
	select {
	case err := <-done:
		t.Fatalf("follow ended early: %v", err)
	default:
	}
	l.writer(streamStdout).Write([]byte("last\n"))
	l.close()
	select {
	case err := <-done:
		if err != nil || out.String() != "first\nsecond\nlast\n" {
			t.Errorf("follow ended with %v after %q", err, out.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with the run")
	}

	// A follower stops when its client goes away.
	l2, _ := createContainerLog(filepath.Join(t.TempDir(), "1.log"), clocktesting.NewFakePassiveClock(logStart))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- copyLog(ctx, path, l2, api.ContainerLogOpts{Follow: true}, logStart, out) }()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with its context")
	}
}

func TestTerminationMessage(t *testing.T) {
	l, err := createContainerLog(filepath.Join(t.TempDir(), "0.log"), clocktesting.NewFakePassiveClock(logStart))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		l.writer(streamStderr).Write([]byte(strings.Repeat("x", i%7) + "\n"))
	}
	l.writer(streamStderr).Write([]byte("fatal: out of cheese\n"))
	msg := l.terminationMessage()
	if !strings.HasSuffix(msg, "fatal: out of cheese") || strings.Count(msg, "\n") > terminationMessageLines-1 || len(msg) > terminationMessageBytes {
		t.Errorf("termination message of %d bytes, %d lines, ending %q", len(msg), strings.Count(msg, "\n")+1, msg[max(0, len(msg)-30):])
	}
}
