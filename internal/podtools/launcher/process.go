package launcher

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

// processSpec is one child process: the pserver or the trainer.
type processSpec struct {
	role    string // "pserver" or "trainer": the output prefix and the name in messages
	argv    []string
	dir     string
	env     []string
	logPath string      // receives stdout and stderr, unprefixed
	output  *syncWriter // receives the same, each line behind "[role] "
}

// process is a started child, in its own process group so that a signal
// reaches whatever it spawned too.
type process struct {
	role string
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited and its output is written
	code int           // exit code, 128+signal when killed; valid after done
	// lastOutput is when it started or last wrote output (Unix nanoseconds):
	// how the launcher tells a silent trainer (grouprestart.go).
	lastOutput atomic.Int64
}

// silentFor is how long the process has written nothing.
func (p *process) silentFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, p.lastOutput.Load()))
}

// activityWriter records when output passes through it.
type activityWriter struct {
	w    io.Writer
	last *atomic.Int64
}

func (a activityWriter) Write(b []byte) (int, error) {
	a.last.Store(time.Now().UnixNano())
	return a.w.Write(b)
}

// pipeDrainTimeout bounds how long an exited child's output pipes are read
// when a grandchild keeps them open.
const pipeDrainTimeout = 2 * time.Second

func startProcess(spec processSpec) (*process, error) {
	logFile, err := os.OpenFile(spec.logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the %s log: %w", spec.role, err)
	}
	prefixed := newPrefixWriter(spec.output, "["+spec.role+"] ")

	p := &process{role: spec.role, done: make(chan struct{})}
	p.lastOutput.Store(time.Now().UnixNano())
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	// One writer for both streams makes exec use one pipe, so the log keeps
	// the order the process wrote in, like the three-node tutorial's `2>&1 | tee`.
	output := activityWriter{w: io.MultiWriter(logFile, prefixed), last: &p.lastOutput}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = pipeDrainTimeout
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting the %s %q: %w", spec.role, spec.argv[0], err), logFile.Close())
	}
	p.cmd = cmd
	go func() {
		_ = cmd.Wait() // the exit status is read from ProcessState below
		_ = prefixed.Flush()
		_ = logFile.Close()
		p.code = exitCode(cmd.ProcessState)
		close(p.done)
	}()
	return p, nil
}

// exitCode is a shell's $? for a finished process: its exit status, or
// 128+signal when a signal ended it.
func exitCode(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group. A group that is gone already is
// not an error.
func (p *process) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// stop ends the process group: SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		p.signal(syscall.SIGKILL) // leftovers of the group, if any
		return
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}
