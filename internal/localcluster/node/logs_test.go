package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
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

	// With timestamps the line gets one, not one per record.
	out.Reset()
	if err := copyLog(context.Background(), path, nil, api.ContainerLogOpts{Timestamps: true}, logStart.Add(time.Minute), &out); err != nil {
		t.Fatal(err)
	}
	if want := "2024-05-01T12:00:01.000000000Z " + long + "\n"; out.String() != want {
		t.Errorf("timestamped: %d bytes, %d timestamps; want %d bytes, one timestamp", out.Len(), strings.Count(out.String(), "2024-"), len(want))
	}

	// Tail counts records, as the kubelet's: the last one is the line's end.
	out.Reset()
	if err := copyLog(context.Background(), path, nil, api.ContainerLogOpts{Tail: 1}, logStart.Add(time.Minute), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != long[:10]+"\n" {
		t.Errorf("tail=1 read %q, want the last record's 10 bytes and the newline", out.String())
	}
}

// A record still being written when a read without follow gets to it is
// shown as far as it goes.
func TestCopyLogShowsARecordBeingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	content := "2024-05-01T12:00:00Z stdout F whole\n2024-05-01T12:00:01Z stdout F hal"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := copyLog(context.Background(), path, nil, api.ContainerLogOpts{}, logStart.Add(time.Minute), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "whole\nhal" {
		t.Errorf("got %q, want the whole line and the half one", out.String())
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
		// Times are shown fixed width, as the kubelet shows them.
		{"timestamps", api.ContainerLogOpts{Tail: 2, Timestamps: true}, "2024-05-01T12:00:03.000000000Z d\n2024-05-01T12:00:04.000000000Z c"},
		{"since time", api.ContainerLogOpts{SinceTime: logStart.Add(time.Second)}, "b\nd\nc"},
		{"since seconds", api.ContainerLogOpts{SinceSeconds: 57}, "d\nc"},
		// Given both (the API server refuses that), the later one counts.
		{"since time later than since seconds", api.ContainerLogOpts{SinceTime: logStart.Add(3 * time.Second), SinceSeconds: 59}, "d\nc"},
		{"since seconds later than since time", api.ContainerLogOpts{SinceTime: logStart, SinceSeconds: 57}, "d\nc"},
		{"limit bytes", api.ContainerLogOpts{LimitBytes: 3}, "a\nb"},
		{"limit bytes after tail", api.ContainerLogOpts{Tail: 2, LimitBytes: 2}, "d\n"},
		{"limit bytes beyond the log", api.ContainerLogOpts{LimitBytes: 100}, "a\nb\nd\nc"},
		{"limit bytes counts timestamps", api.ContainerLogOpts{Timestamps: true, LimitBytes: 32}, "2024-05-01T12:00:00.000000000Z a"},
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

// follow starts copyLog following l's file at path and returns its output
// and the channel of its end.
func follow(ctx context.Context, path string, l *containerLog, opts api.ContainerLogOpts, now time.Time) (*testutil.SyncBuffer, <-chan error) {
	out := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	opts.Follow = true
	go func() { done <- copyLog(ctx, path, l, opts, now, out) }()
	return out, done
}

func waitFollowed(t *testing.T, out *testutil.SyncBuffer, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("followed %q", want), func() bool { return out.String() == want })
}

func waitFollowEnded(t *testing.T, out *testutil.SyncBuffer, done <-chan error, want string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil || out.String() != want {
			t.Errorf("follow ended with %v after %q, want %q", err, out.String(), want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("follow did not end; followed %q", out.String())
	}
}

func writeLine(t *testing.T, l *containerLog, line string) {
	t.Helper()
	if _, err := l.writer(streamStdout).Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
}

func TestCopyLogFollowsUntilTheRunEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l, err := createContainerLog(path, clocktesting.NewFakePassiveClock(logStart))
	if err != nil {
		t.Fatal(err)
	}
	out, done := follow(context.Background(), path, l, api.ContainerLogOpts{}, logStart)
	writeLine(t, l, "first\n")
	waitFollowed(t, out, "first\n")
	writeLine(t, l, "second\n")
	waitFollowed(t, out, "first\nsecond\n")
	select {
	case err := <-done:
		t.Fatalf("follow ended early: %v", err)
	default:
	}
	writeLine(t, l, "last\n")
	l.close()
	waitFollowEnded(t, out, done, "first\nsecond\nlast\n")

	// A follower stops when its client goes away.
	l2, _ := createContainerLog(filepath.Join(t.TempDir(), "1.log"), clocktesting.NewFakePassiveClock(logStart))
	ctx, cancel := context.WithCancel(context.Background())
	out, done = follow(ctx, path, l2, api.ContainerLogOpts{}, logStart)
	waitFollowed(t, out, "first\nsecond\nlast\n")
	cancel()
	waitFollowEnded(t, out, done, "first\nsecond\nlast\n")
}

// Since, tail and limit bytes hold while following too.
func TestCopyLogFollowsWithOptions(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(logStart)
	path := filepath.Join(t.TempDir(), "0.log")
	l, err := createContainerLog(path, clk)
	if err != nil {
		t.Fatal(err)
	}
	writeLine(t, l, "old\n")
	clk.SetTime(logStart.Add(10 * time.Second))
	writeLine(t, l, "recent\n")
	since, sinceDone := follow(context.Background(), path, l, api.ContainerLogOpts{SinceTime: logStart.Add(5 * time.Second)}, logStart)
	tail, tailDone := follow(context.Background(), path, l, api.ContainerLogOpts{Tail: 1}, logStart)
	limited, limitedDone := follow(context.Background(), path, l, api.ContainerLogOpts{LimitBytes: 13}, logStart)
	waitFollowed(t, since, "recent\n")
	waitFollowed(t, tail, "recent\n")
	waitFollowed(t, limited, "old\nrecent\n")

	// The byte limit ends a follow while the run goes on.
	writeLine(t, l, "new\n")
	waitFollowEnded(t, limited, limitedDone, "old\nrecent\nne")
	waitFollowed(t, since, "recent\nnew\n")
	waitFollowed(t, tail, "recent\nnew\n")
	l.close()
	waitFollowEnded(t, since, sinceDone, "recent\nnew\n")
	waitFollowEnded(t, tail, tailDone, "recent\nnew\n")
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

// A failed container's message is what the kubelet gives it: under
// FallbackToLogsOnError (the operator's default for PaddleJob pods) the
// end of its log, here a real Paddle failure written after a long
// training log, on stdout and stderr as Paddle writes them; under File or
// no policy, nothing (the node keeps no termination-log file).
func TestFailureMessage(t *testing.T) {
	tail, err := os.ReadFile(filepath.Join("..", "..", "paddlefailure", "testdata", "logs", "missing-module-3.0.0.log"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := createContainerLog(filepath.Join(t.TempDir(), "0.log"), clocktesting.NewFakePassiveClock(logStart))
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for i := range 500 {
		line := fmt.Sprintf("step %d loss 0.69\n", i)
		l.writer(streamStdout).Write([]byte(line))
		all.WriteString(line)
	}
	l.writer(streamStderr).Write(tail)
	all.Write(tail)
	// The kubelet's reading: the last 80 lines, then their last 2048 bytes.
	lines := strings.SplitAfter(strings.TrimRight(all.String(), "\n"), "\n")
	kubelet := strings.Join(lines[len(lines)-80:], "")
	kubelet = kubelet[max(0, len(kubelet)-2048):]
	for _, tc := range []struct {
		policy corev1.TerminationMessagePolicy
		want   string
	}{
		{corev1.TerminationMessageFallbackToLogsOnError, kubelet},
		{corev1.TerminationMessageReadFile, ""},
		{"", ""},
	} {
		if got := failureMessage(tc.policy, l.terminationMessage()); got != tc.want {
			t.Errorf("policy %q: message %q, want %q", tc.policy, got, tc.want)
		}
	}
}
