package localcluster

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A component that keeps exiting is restarted with the crash back-off
// (1 s, then 2 s...), each restart recorded. The test reads the back-off
// from the supervisor's log and checks it against the component's own
// record of its starts: lower bounds only, which load cannot break.
func TestSuperviseRestartsWithBackoff(t *testing.T) {
	dir := t.TempDir()
	status, starts := filepath.Join(dir, "c.supervisor.json"), filepath.Join(dir, "starts")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Supervise(ctx, []string{"sh", "-c", "date +%s.%N >> " + starts + "; exit 3"}, status, log)
	}()
	waitUntil(t, "the second restart", func() bool { return strings.Contains(log.String(), "restart 2 in") })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the supervisor did not stop")
	}
	for _, want := range []string{"ended (exit status 3)", "restart 1 in 1s\n", "restart 2 in 2s\n"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	// Each start waited at least its back-off after the one before.
	var at []float64
	data, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Fields(string(data)) {
		v, err := strconv.ParseFloat(line, 64)
		if err != nil {
			t.Fatal(err)
		}
		at = append(at, v)
	}
	if len(at) < 2 {
		t.Fatalf("%d starts recorded, want at least 2", len(at))
	}
	for i, backoff := range []float64{1, 2} {
		if i+1 < len(at) && at[i+1]-at[i] < backoff {
			t.Errorf("start %d came %.3fs after start %d, before its %.0fs back-off", i+2, at[i+1]-at[i], i+1, backoff)
		}
	}
	st := readSupervisedStatus(status)
	if st.Restarts != len(at) || st.LastExit != "exit status 3" || st.PID != 0 {
		t.Errorf("status %+v, want %d restarts after exit status 3, none running", st, len(at))
	}
}

// waitUntil polls cond until it holds, failing the test after 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting 30s for %s", what)
		}
	}
}

// Stopping the supervisor stops its component: SIGTERM, then it returns.
func TestSuperviseStopsItsComponent(t *testing.T) {
	status := filepath.Join(t.TempDir(), "c.supervisor.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Supervise(ctx, []string{"sleep", "60"}, status, io.Discard) }()
	var pid int
	waitUntil(t, "the component to run", func() bool { pid = readSupervisedStatus(status).PID; return pid != 0 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the supervisor did not stop")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("component %d still runs", pid)
	}
	if st := readSupervisedStatus(status); st.Restarts != 0 {
		t.Errorf("a stopped component counted as restarted: %+v", st)
	}
}

// The supervisor's decision after its component exits: a crash waits the
// back-off, doubling, back to 1 s after 10 minutes up; a restart the
// cluster asked for starts it at once and resets the back-off.
func TestNextStart(t *testing.T) {
	for _, tc := range []struct {
		name              string
		previous, ran     time.Duration
		requested         bool
		wantWait, wantOff time.Duration
	}{
		{"the first crash", 0, time.Second, false, time.Second, time.Second},
		{"another crash doubles", 64 * time.Second, time.Second, false, 128 * time.Second, 128 * time.Second},
		{"a crash after 10 minutes up", 128 * time.Second, 10 * time.Minute, false, time.Second, time.Second},
		{"a requested restart", 64 * time.Second, time.Second, true, 0, 0},
		{"the crash after a requested restart", 0, time.Second, false, time.Second, time.Second},
	} {
		wait, backoff := nextStart(tc.previous, tc.ran, tc.requested)
		if wait != tc.wantWait || backoff != tc.wantOff {
			t.Errorf("%s: wait %s, back-off %s; want %s, %s", tc.name, wait, backoff, tc.wantWait, tc.wantOff)
		}
	}
	// Ten requested restarts in a row never wait.
	var backoff time.Duration
	for i := range 10 {
		var wait time.Duration
		if wait, backoff = nextStart(backoff, time.Second, true); wait != 0 {
			t.Fatalf("requested restart %d waits %s", i+1, wait)
		}
	}
}

// A component crashes, the cluster asks for a restart, it crashes again:
// the crashes are counted and backed off, the requested restart is neither
// (it starts at once) and resets the back-off, so the second crash waits
// 1 s again, not 2 s. The supervisor's log says which was which.
func TestSuperviseRestartsOnRequestAtOnce(t *testing.T) {
	status := filepath.Join(t.TempDir(), "c.supervisor.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Supervise(ctx, []string{"sleep", "60"}, status, log) }()
	running := func(what string, not int) int {
		var pid int
		waitUntil(t, what, func() bool { pid = readSupervisedStatus(status).PID; return pid != 0 && pid != not })
		return pid
	}
	pid := running("the component to run", 0)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pid = running("the component back after a crash", pid)
	if err := requestRestart(status, pid); err != nil {
		t.Fatal(err)
	}
	pid = running("the component back after the requested restart", pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	running("the component back after the second crash", pid)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"ended (signal: killed)", "; restart 1 in 1s\n",
		"ended (signal: terminated)", "; restarted on request (1 so far) at once\n",
		"; restart 2 in 1s\n"}
	got := log.String()
	for _, w := range want {
		i := strings.Index(got, w)
		if i < 0 {
			t.Fatalf("the supervisor's log lacks %q after what came before:\n%s", w, log)
		}
		got = got[i+len(w):]
	}
	st := readSupervisedStatus(status)
	if st.Restarts != 2 || st.Requested != 1 || st.LastExit != "signal: killed" {
		t.Errorf("status %+v, want 2 restarts after crashes (the last killed) and 1 requested", st)
	}
	if _, err := os.Stat(restartRequestPath(status)); !os.IsNotExist(err) {
		t.Errorf("the restart request outlived the restart: %v", err)
	}
}
