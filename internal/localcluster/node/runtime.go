package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

// spawner starts processes from one OS thread that lives as long as the node.
// Processes are started with a parent-death signal, which Linux ties to the
// thread that forked them: forking from a thread the Go runtime might retire
// would kill a container for nothing. The locked thread is also what a
// container joins its cgroup through in cgroup v1 (containerCgroup.start),
// and what enters the pod's network namespace for the fork, so that bwrap
// and the container are born in it (bwrap is not told to unshare the
// network).
type spawner struct {
	reqs chan spawnRequest
	// home is where the spawner's thread rests between starts when it
	// cannot go back to the host's namespace (startIn); nil for none.
	home *podnetwork.Namespace
}

type spawnRequest struct {
	cmd    *exec.Cmd
	cgroup *containerCgroup
	netns  *podnetwork.Namespace
	done   chan error
}

func newSpawner(home *podnetwork.Namespace) *spawner {
	s := &spawner{reqs: make(chan spawnRequest), home: home}
	go func() {
		// Never unlocked: the thread ends with the node, and its children
		// with it.
		runtime.LockOSThread()
		// A normal user's node runs with ambient capabilities in a user
		// namespace of its own (localcluster's ownUserNamespace), which
		// every process it execs would inherit: bubblewrap refuses to run
		// with capabilities it was not given as setuid, and sandboxes hold
		// none. Ambient capabilities are per thread; the thread keeps its
		// own, which entering a pod's network namespace takes.
		_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
		for r := range s.reqs {
			r.done <- startIn(r.netns, s.home, r.cmd, r.cgroup)
		}
	}()
	return s
}

// startIn starts cmd in group from the calling locked thread, moved into
// netns (when set) for the fork and back afterwards. A normal user's node
// cannot come back to the host's namespace (podnetwork.Namespace.Do): its
// spawner moves on to home, the node's namespace, instead, so that it holds
// no pod's namespace once the pod is gone. Every container names its
// namespace, so where the thread rests does not matter to the next one.
func startIn(netns, home *podnetwork.Namespace, cmd *exec.Cmd, group *containerCgroup) error {
	if netns == nil {
		return group.start(cmd)
	}
	restore, err := netns.EnterLocked()
	if err != nil {
		return fmt.Errorf("entering the pod's network namespace: %w", err)
	}
	err = group.start(cmd)
	if restore() != nil && home != nil {
		_, _ = home.EnterLocked()
	}
	return err
}

// run starts cmd in group (none when nil) in netns (the node's own when
// nil).
func (s *spawner) run(cmd *exec.Cmd, group *containerCgroup, netns *podnetwork.Namespace) error {
	done := make(chan error, 1)
	s.reqs <- spawnRequest{cmd: cmd, cgroup: group, netns: netns, done: done}
	return <-done
}

// processStarter starts the sandboxed process of a container's run. The
// node's is a spawner; the container loop's tests use a fake.
type processStarter interface {
	start(spec processSpec) (containerProcess, error)
}

// containerProcess is a container's running sandbox.
type containerProcess interface {
	// exited closes once every process of the sandbox is gone.
	exited() <-chan struct{}
	// exitCode is the command's exit status (128+signal if a signal ended
	// it); it is valid once exited is closed.
	exitCode() int32
	// signal sends sig to every process of the sandbox.
	signal(sig syscall.Signal)
}

// start starts a container's sandbox with bubblewrap.
func (s *spawner) start(spec processSpec) (containerProcess, error) {
	p, err := startProcess(s, spec)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// processSpec is a sandboxed process to start.
type processSpec struct {
	Bwrap string
	Args  []string // bwrap's arguments, ending in the container's command
	Env   []string
	Log   *containerLog
	// Cgroup, when set, holds the container's resource limits: bwrap starts
	// inside it (containerCgroup.start).
	Cgroup *containerCgroup
	// Files are the mounts' descriptors bwrap binds, inherited after the
	// info descriptor (sandboxFiles).
	Files []*os.File
	// Opened are every descriptor opened for the process's mounts, closed
	// once bwrap has its copies.
	Opened []*os.File
	// Netns is the network namespace the sandbox starts in: the pod's, or
	// the node's for a hostNetwork pod.
	Netns *podnetwork.Namespace
	// Credential, when set, is the host user bwrap runs as (a root node's
	// range, sandbox_hostids.go); nil runs it as the node's user.
	Credential *syscall.Credential
	// Staged, when set, are the run's staged mounts (sandbox_stage.go):
	// unmounted once bwrap has cloned the sandbox, removed once it is gone.
	Staged *stagedRun
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// process is a running sandbox: bwrap, which waits for the sandbox's init,
// which runs the container's command. The sandbox's processes share the
// process group sandboxPID (bwrap's --new-session), which excludes the outer
// bwrap: a signal to the group reaches the container's processes without
// making bwrap exit before the container does.
type process struct {
	cmd        *exec.Cmd
	sandboxPID int
	done       chan struct{}
	// code is set before done closes.
	code int32
}

// startProcess starts a sandbox and returns once its processes exist.
func startProcess(sp *spawner, spec processSpec) (*process, error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer infoR.Close()
	cmd := exec.Command(spec.Bwrap, spec.Args...)
	cmd.Env = spec.Env
	cmd.Stdout = spec.Log.writer(streamStdout)
	cmd.Stderr = spec.Log.writer(streamStderr)
	cmd.ExtraFiles = append([]*os.File{infoW}, spec.Files...) // infoFD, then firstMountFD...
	// Go's child sets the parent-death signal after the credential, which
	// would clear it: it holds for the unprivileged bwrap too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: spec.Credential}
	// Output of processes that outlive the sandbox's init cannot hold up Wait.
	cmd.WaitDelay = 2 * time.Second
	err = sp.run(cmd, spec.Cgroup, spec.Netns)
	infoW.Close()
	if err != nil {
		return nil, fmt.Errorf("starting bwrap: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go p.wait()

	// bwrap writes the sandbox's pid once it has cloned it and closes the
	// pipe; an empty read means it failed before, and said why on stderr.
	// (Failures setting the sandbox up come later: see startFailure.)
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	data, _ := io.ReadAll(infoR)
	if err := json.Unmarshal(data, &info); err != nil || info.ChildPID <= 0 {
		<-p.done
		return nil, errors.New("the sandbox could not be set up: " + spec.Log.terminationMessage())
	}
	p.sandboxPID = info.ChildPID
	return p, nil
}

// startFailure recognizes a sandbox that bwrap failed to set up, or whose
// command it could not exec: bwrap exits 1 right away after one "bwrap: "
// line. It returns that line.
func startFailure(exitCode int32, ranFor time.Duration, output string) (string, bool) {
	if exitCode != 1 || ranFor > 2*time.Second || !strings.HasPrefix(output, "bwrap: ") || strings.Contains(output, "\n") {
		return "", false
	}
	return output, true
}

func (p *process) wait() {
	_ = p.cmd.Wait()
	p.code = exitCodeOf(p.cmd.ProcessState)
	close(p.done)
}

func (p *process) exited() <-chan struct{} { return p.done }
func (p *process) exitCode() int32         { return p.code }

// exitCodeOf reports a signal as 128+signal, as shells and the kubelet do.
func exitCodeOf(st *os.ProcessState) int32 {
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(st.ExitCode())
}

// signal sends sig to every process of the sandbox. SIGKILL also reaches the
// sandbox's init, whose death ends every process left in its PID namespace.
//
// Any other signal waits for the container's command to exist: bwrap names
// the sandbox before setting it up, and only then makes the session (its
// process group) and forks the command. A signal sent to the group before
// that would be lost (no such group yet, or only the init, which the kernel
// shields from it), and a container stopped as it starts would wait out its
// grace period for SIGKILL.
func (p *process) signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		if err := syscall.Kill(-p.sandboxPID, sig); err != nil {
			// The group is gone or never formed: make sure bwrap is too.
			_ = p.cmd.Process.Kill()
		}
		return
	}
	if p.commandStarted() {
		_ = syscall.Kill(-p.sandboxPID, sig)
		return
	}
	go p.signalOnceStarted(sig)
}

// commandStarted reports whether the sandbox's init has forked the command,
// which it does after making the session. Without the kernel's list of
// children it assumes so.
func (p *process) commandStarted() bool {
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.sandboxPID, p.sandboxPID))
	return err != nil || len(bytes.TrimSpace(children)) > 0
}

// signalOnceStarted delivers sig once the command exists, unless the sandbox
// ends first. The kernel tells no one when a process forks, so it looks every
// few milliseconds, for as long as bwrap's setup takes.
func (p *process) signalOnceStarted(sig syscall.Signal) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			if p.commandStarted() {
				_ = syscall.Kill(-p.sandboxPID, sig)
				return
			}
		}
	}
}
