package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A supervisor that ends on SIGTERM while its component ignores it (as a
// component still shutting down outlives it): stop returns only once the
// component is gone too, killed after the grace period.
func TestStopWaitsForTheWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "component.pid")
	// The leader exits on SIGTERM; its child ignores it and says it does.
	script := `sh -c 'trap "" TERM; echo $$ > ` + pidFile + `; while :; do sleep 1; done' & wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reap the leader as soon as it ends
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var component int
	waitUntil(t, "the component to start", func() bool {
		data, err := os.ReadFile(pidFile)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		component, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	p := &process{Name: "c", PID: cmd.Process.Pid}
	p.StartTime, _ = procStartTime(p.PID)

	if err := p.stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if groupAlive(p.PID) {
		t.Errorf("a process of group %d still runs after stop", p.PID)
	}
	if state, err := procState(component); err == nil && state != "Z" && state != "X" {
		t.Errorf("the component (pid %d) still runs after stop: state %s", component, state)
	}
}
