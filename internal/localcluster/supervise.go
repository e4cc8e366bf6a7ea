package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
)

// Supervision: every component runs under `paddlejob supervise`, which
// restarts it whenever it exits, with the node's crash back-off (1 s
// doubling to 5 minutes, reset after 10 minutes of running), as a kubelet
// restarts a static pod. A component killed mid-job comes back; the jobs go
// on. The supervisor records its restarts in a status file that `paddlejob
// status` reads; stopping the cluster stops the supervisor and its child
// together (they share a session).

// SupervisedStatus is what a supervisor records of its component.
type SupervisedStatus struct {
	// PID is the running component's, 0 while it waits to restart.
	PID int `json:"pid"`
	// Restarts counts the restarts since the cluster started.
	Restarts int `json:"restarts"`
	// LastExit says how the component last ended ("exit status 2",
	// "signal: killed"), and when.
	LastExit     string    `json:"lastExit,omitempty"`
	LastExitTime time.Time `json:"lastExitTime,omitzero"`
}

// supervisedStatusPath is where a component's supervisor writes its status.
func supervisedStatusPath(logDir, name string) string {
	return filepath.Join(logDir, name+".supervisor.json")
}

// readSupervisedStatus reads a supervisor's status; nothing yet is zero.
func readSupervisedStatus(path string) SupervisedStatus {
	var st SupervisedStatus
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &st)
	}
	return st
}

// Supervise runs args until ctx ends, restarting it whenever it exits and
// recording its status at statusPath; log receives a line per restart. When
// ctx ends it sends the component SIGTERM and waits for it.
func Supervise(ctx context.Context, args []string, statusPath string, log io.Writer) error {
	if len(args) == 0 {
		return errors.New("supervise: no command")
	}
	// Children get SIGKILL when the thread that forked them ends (their
	// parent-death signal): fork them all from this one, for good.
	runtime.LockOSThread()
	var st SupervisedStatus
	var backoff time.Duration
	for {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		started := time.Now()
		var exit error
		if err := cmd.Start(); err != nil {
			exit = err
		} else {
			st.PID = cmd.Process.Pid
			writeSupervisedStatus(statusPath, st)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case exit = <-done:
			case <-ctx.Done():
				_ = cmd.Process.Signal(syscall.SIGTERM)
				<-done
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if exit == nil {
			exit = errors.New("exit status 0")
		}
		ran := time.Since(started)
		backoff = node.NextCrashBackoff(backoff, ran)
		st.PID, st.Restarts, st.LastExit, st.LastExitTime = 0, st.Restarts+1, exit.Error(), time.Now()
		writeSupervisedStatus(statusPath, st)
		fmt.Fprintf(log, "paddlejob supervise: %s ended (%v) after %s; restart %d in %s\n", args[0], exit, ran.Round(time.Millisecond), st.Restarts, backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
}

func writeSupervisedStatus(path string, st SupervisedStatus) {
	data, err := json.Marshal(st)
	if err == nil {
		_ = fsutil.WriteFileAtomic(path, data, 0o644)
	}
}
