//go:build integration

package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestProcessSignals starts real sandboxes: SIGTERM reaches the command
// (bwrap itself stays to report its exit code), SIGKILL ends every process.
func TestProcessSignals(t *testing.T) {
	requireBwrap(t)
	bwrap, _ := findBwrap("")
	dir := t.TempDir()
	hosts, hostname := filepath.Join(dir, "hosts"), filepath.Join(dir, "hostname")
	for _, f := range []string{hosts, hostname} {
		if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sp := newSpawner(nil)
	start := func(name, script string) (*process, *containerLog) {
		t.Helper()
		l, err := createContainerLog(filepath.Join(dir, name+".log"), clocktesting.NewFakePassiveClock(logStart))
		if err != nil {
			t.Fatal(err)
		}
		args := bwrapArgs(os.DirFS("/"), sandboxSpec{Hostname: "h", HostsFile: hosts, HostnameFile: hostname, Argv: []string{"/bin/sh", "-c", script}})
		p, err := startProcess(sp, processSpec{Bwrap: bwrap, Args: args, Env: []string{"PATH=" + standardPath}, Log: l})
		if err != nil {
			t.Fatal(err)
		}
		return p, l
	}
	wait := func(p *process) int32 {
		t.Helper()
		select {
		case <-p.exited():
			return p.exitCode()
		case <-time.After(10 * time.Second):
			t.Fatal("process did not exit")
			return 0
		}
	}

	p, _ := start("exit", "exit 3")
	if code := wait(p); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}

	// A container stopped as it starts, before bwrap has set the sandbox up
	// and forked the command, still gets SIGTERM rather than waiting for
	// SIGKILL (the command dies of it: 143).
	for i := range 5 {
		p, _ := start(fmt.Sprint("early-term-", i), "exec sleep 100")
		p.signal(syscall.SIGTERM)
		if code := wait(p); code != 143 {
			t.Errorf("SIGTERM as the sandbox starts (try %d): exit code %d, want 143", i, code)
		}
	}

	p, l := start("term", `trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
	waitForOutput(t, l, "ready")
	p.signal(syscall.SIGTERM)
	if code := wait(p); code != 7 {
		t.Errorf("after SIGTERM: exit code %d, want the handler's 7", code)
	}

	// The command survives SIGTERM (its handler says so once it ran), and a
	// child that ignores it is still there for SIGKILL to end.
	p, l = start("kill", `(trap '' TERM; exec sleep 100) & trap 'echo survived TERM' TERM; echo ready; while :; do sleep 0.05; done`)
	waitForOutput(t, l, "ready")
	p.signal(syscall.SIGTERM)
	waitForOutput(t, l, "survived TERM")
	select {
	case <-p.exited():
		t.Fatal("a process that handles SIGTERM and goes on exited")
	default:
	}
	p.signal(syscall.SIGKILL)
	if code := wait(p); code != 137 {
		t.Errorf("after SIGKILL: exit code %d, want 137", code)
	}
	if err := syscall.Kill(-p.sandboxPID, 0); err == nil {
		t.Error("processes of the sandbox are left")
	}
}

func waitForOutput(t *testing.T, l *containerLog, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(l.terminationMessage(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q, want %q", l.terminationMessage(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
