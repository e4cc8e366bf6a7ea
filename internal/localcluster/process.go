package localcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// process is a component of the local cluster running in the background. Its
// identity is its PID and the kernel's start time of that PID, so a recycled
// PID is never mistaken for it.
type process struct {
	Name string `json:"name"`
	// PID is the supervisor's (see Supervise), which runs the component.
	PID       int      `json:"pid"`
	StartTime uint64   `json:"startTime"`
	Args      []string `json:"args"`
	// Env is what the component gets beyond this program's environment.
	Env []string `json:"env,omitempty"`
	Log string   `json:"log"`
	// Supervisor is the paddlejob executable supervising the component.
	Supervisor string `json:"supervisor"`
	// Status is where the supervisor records the component's restarts.
	Status string `json:"status"`
}

// startProcess starts a component under a supervisor (the paddlejob
// executable's `supervise`), detached from the caller (its own session, no
// terminal), logging to logDir/<name>.log.
func startProcess(supervisor, name string, args []string, env []string, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	status := supervisedStatusPath(logDir, name)
	_ = os.Remove(status)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(supervisor, append([]string{"supervise", "--status=" + status, "--"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if isNode(name) || name == componentNetwork {
		ownUserNamespace(cmd.SysProcAttr, os.Geteuid(), os.Getegid())
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{Name: name, PID: cmd.Process.Pid, Args: args, Env: env, Log: logPath, Supervisor: supervisor, Status: status}
	p.StartTime, _ = procStartTime(p.PID)
	// The child outlives this command; release it so no zombie waits on us.
	_ = cmd.Process.Release()
	return p, nil
}

// ownUserNamespace starts a normal user's node or cluster network (with its
// supervisor) in a user namespace of its own, where the user is mapped to
// itself, so that it may create network namespaces, links and the packet
// socket of its uplink, the way rootless container engines do: it keeps
// CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_NET_RAW there as ambient
// capabilities across exec (its uid stays the user's, so nothing else about
// it changes), capabilities over the namespaces it creates and nothing of
// the host's. The node's process spawner drops them again for
// bubblewrap (node/runtime.go). A root node needs none of this.
func ownUserNamespace(attr *syscall.SysProcAttr, uid, gid int) {
	if uid == 0 {
		return
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_RAW}
}

// supervised is what the supervisor recorded of the component.
func (p *process) supervised() SupervisedStatus { return readSupervisedStatus(p.Status) }

// alive reports whether the process still runs (and is the one started).
func (p *process) alive() bool {
	st, err := procStartTime(p.PID)
	if err != nil {
		return false
	}
	if p.StartTime != 0 && st != p.StartTime {
		return false
	}
	state, err := procState(p.PID)
	return err == nil && state != "Z" && state != "X"
}

// stop sends SIGTERM to the process's group, waits up to grace, then
// SIGKILLs what is left. It returns once every process of the group is gone:
// the supervisor may end before its component does (a SIGKILL reaches both,
// and a large component takes longer to exit), and a component still exiting
// still holds its ports.
func (p *process) stop(grace time.Duration) error {
	if !p.alive() {
		return nil
	}
	// The component was started as a session leader: its PID is its group's,
	// and no other process takes that PID while one of the group lives.
	gone := func() error {
		if groupAlive(p.PID) {
			return errors.New("still running")
		}
		return nil
	}
	ctx := context.Background()
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	if waitFor(ctx, grace, gone) == nil {
		return nil
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	if waitFor(ctx, 10*time.Second, gone) == nil {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not stop", p.Name, p.PID)
}

// groupAlive reports whether a process of group pgid, zombies aside, runs.
func groupAlive(pgid int) bool {
	group := strconv.Itoa(pgid)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields, err := procStatFields(pid)
		if err != nil || len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if fields[2] == group {
			return true
		}
	}
	return false
}

// procStartTime is field 22 of /proc/<pid>/stat: when the process started,
// in clock ticks since boot.
func procStartTime(pid int) (uint64, error) {
	fields, err := procStatFields(pid)
	if err != nil {
		return 0, err
	}
	if len(fields) < 20 {
		return 0, errors.New("short /proc stat")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

func procState(pid int) (string, error) {
	fields, err := procStatFields(pid)
	if err != nil {
		return "", err
	}
	return fields[0], nil
}

// procStatFields are the fields of /proc/<pid>/stat after the command name
// (which may hold spaces), starting with the state.
func procStatFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("malformed /proc stat")
	}
	return strings.Fields(s[i+1:]), nil
}

// freePorts picks n distinct TCP ports on 127.0.0.1 that nothing listens on.
// They are taken above the kernel's ephemeral range when it leaves room
// there: a port the kernel hands out for bind(0) is one it also hands to
// outgoing connections, and one of those took the API server's port between
// the pick and the bind. Below that range lie the pods' ports (23000-29999)
// and NodePorts.
func freePorts(n int) ([]int, error) {
	first, last := portsAboveEphemeral()
	picked := map[int]bool{}
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		port := 0 // the kernel's choice, when the range above is too small or crowded
		if last-first >= 255 && attempts < 50*n {
			port = first + rand.IntN(last-first+1)
		}
		if picked[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			if port == 0 {
				return nil, err
			}
			continue
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !picked[port] {
			picked[port] = true
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// portsAboveEphemeral is the range from the end of the kernel's ephemeral
// port range to 65535; empty when the range cannot be read.
func portsAboveEphemeral() (first, last int) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 1, 0
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 1, 0
	}
	end, err := strconv.Atoi(fields[1])
	if err != nil {
		return 1, 0
	}
	return end + 1, 65535
}

// portOpen reports whether something listens on 127.0.0.1:port.
func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
