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
	"strconv"
	"strings"
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
//
// A restart the cluster asks for (a node reading a new image table) is no
// crash: the cluster writes a restart request naming the component's PID
// beside the status file before it stops the component, and when that
// process exits the supervisor starts it again at once, with the back-off
// reset, counting it apart. Asked for ten times in a row, a node would
// otherwise wait 1 s, 2 s... 2m8s before its tenth start.

// SupervisedStatus is what a supervisor records of its component.
type SupervisedStatus struct {
	// PID is the running component's, 0 while it waits to restart.
	PID int `json:"pid"`
	// Restarts counts the restarts since the cluster started, after the
	// component exited on its own (a crash, a kill).
	Restarts int `json:"restarts"`
	// Requested counts the restarts the cluster asked for (a node reading
	// a new image table): they wait for no back-off and reset it.
	Requested int `json:"requested,omitempty"`
	// LastExit says how the component last ended ("exit status 2",
	// "signal: killed"), and when.
	LastExit     string    `json:"lastExit,omitempty"`
	LastExitTime time.Time `json:"lastExitTime,omitzero"`
}

// supervisedStatusPath is where a component's supervisor writes its status.
func supervisedStatusPath(logDir, name string) string {
	return filepath.Join(logDir, name+".supervisor.json")
}

// restartRequestPath is where the cluster asks the supervisor whose status
// is at statusPath to restart its component: the file holds the PID of the
// process to restart.
func restartRequestPath(statusPath string) string {
	return strings.TrimSuffix(statusPath, ".json") + ".restart"
}

// requestRestart stops the component pid that the supervisor recording its
// status at statusPath runs, telling the supervisor first that it is to
// start it again at once: a restart, not a crash.
func requestRestart(statusPath string, pid int) error {
	req := restartRequestPath(statusPath)
	if err := fsutil.WriteFileAtomic(req, []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("asking the supervisor for a restart: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		os.Remove(req)
		return err
	}
	return nil
}

// restartRequested reports whether the cluster asked for the restart of
// process pid, which has exited, and forgets the request.
func restartRequested(statusPath string, pid int) bool {
	req := restartRequestPath(statusPath)
	data, err := os.ReadFile(req)
	if err != nil {
		return false
	}
	asked, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || asked != pid {
		return false
	}
	os.Remove(req)
	return true
}

// nextStart is when a component that exited starts again, and the back-off
// the next crash starts from: at once, with the back-off reset, after a
// restart the cluster asked for; else after the crash back-off, given the
// previous one (zero before the first) and how long the component ran.
func nextStart(previous, ran time.Duration, requested bool) (wait, backoff time.Duration) {
	if requested {
		return 0, 0
	}
	backoff = node.NextCrashBackoff(previous, ran)
	return backoff, backoff
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
	os.Remove(restartRequestPath(statusPath)) // a request to an earlier supervisor
	for {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		started := time.Now()
		var exit error
		pid := 0
		if err := cmd.Start(); err != nil {
			exit = err
		} else {
			pid = cmd.Process.Pid
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
		requested := pid != 0 && restartRequested(statusPath, pid)
		var wait time.Duration
		wait, backoff = nextStart(backoff, ran, requested)
		st.PID = 0
		if requested {
			st.Requested++
			writeSupervisedStatus(statusPath, st)
			fmt.Fprintf(log, "paddlejob supervise: %s ended (%v) after %s; restarted on request (%d so far) at once\n", args[0], exit, ran.Round(time.Millisecond), st.Requested)
			continue
		}
		st.Restarts, st.LastExit, st.LastExitTime = st.Restarts+1, exit.Error(), time.Now()
		writeSupervisedStatus(statusPath, st)
		fmt.Fprintf(log, "paddlejob supervise: %s ended (%v) after %s; restart %d in %s\n", args[0], exit, ran.Round(time.Millisecond), st.Restarts, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func writeSupervisedStatus(path string, st SupervisedStatus) {
	data, err := json.Marshal(st)
	if err == nil {
		_ = fsutil.WriteFileAtomic(path, data, 0o644)
	}
}
