package localcluster

import (
	"context"
	"io"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A component that keeps exiting is restarted with the crash back-off
// (1 s, then 2 s...), each restart recorded.
func TestSuperviseRestartsWithBackoff(t *testing.T) {
	status := filepath.Join(t.TempDir(), "c.supervisor.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	if err := Supervise(ctx, []string{"sh", "-c", "exit 3"}, status, io.Discard); err != nil {
		t.Fatal(err)
	}
	// Exits at about 0 s and 1 s; the third start would be at 3 s. Without
	// the back-off it would have restarted hundreds of times; a slow machine
	// may delay the second exit past the deadline.
	st := readSupervisedStatus(status)
	if st.Restarts < 1 || st.Restarts > 2 || st.LastExit != "exit status 3" || st.PID != 0 {
		t.Errorf("status %+v, want 1 or 2 restarts after exit status 3, none running", st)
	}
}

// Stopping the supervisor stops its component: SIGTERM, then it returns.
func TestSuperviseStopsItsComponent(t *testing.T) {
	status := filepath.Join(t.TempDir(), "c.supervisor.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Supervise(ctx, []string{"sleep", "60"}, status, io.Discard) }()
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		pid = readSupervisedStatus(status).PID
	}
	if pid == 0 {
		t.Fatal("the component never ran")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor did not stop")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("component %d still runs", pid)
	}
	if st := readSupervisedStatus(status); st.Restarts != 0 {
		t.Errorf("a stopped component counted as restarted: %+v", st)
	}
}
