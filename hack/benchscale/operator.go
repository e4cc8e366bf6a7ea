package main

// The controller under test, run as a separate process so that its CPU time
// and peak memory can be read from /proc.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/paddlejob/paddlejob/internal/shellwords"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// operatorConfig says what to run.
type operatorConfig struct {
	// Cmd, when set, is run by sh instead of the built operator.
	Cmd string
	// Args are extra arguments of the built operator.
	Args       string
	QPS        float64
	Burst      int
	RepoRoot   string
	WorkDir    string
	Kubeconfig string
	LogPath    string
}

// operatorProc is the running controller.
type operatorProc struct {
	cmd       *exec.Cmd
	pid       int
	probeAddr string // empty for --operator-cmd: readiness is the warm-up job running
	logPath   string
	logFile   *os.File
	exited    chan struct{}
	waitErr   error
}

// buildOperator builds ./cmd/paddlejob-operator into dir.
func buildOperator(ctx context.Context, repoRoot, dir string) (string, error) {
	bin := filepath.Join(dir, "paddlejob-operator")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/paddlejob-operator")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building ./cmd/paddlejob-operator in %s: %w\n%s", repoRoot, err, out)
	}
	return bin, nil
}

// startOperator builds (unless cfg.Cmd is set) and starts the controller with
// KUBECONFIG pointing at the cluster under test.
func startOperator(ctx context.Context, cfg operatorConfig) (*operatorProc, error) {
	p := &operatorProc{logPath: cfg.LogPath, exited: make(chan struct{})}
	var argv []string
	if cfg.Cmd != "" {
		// exec: the pid measured is the controller's, not the shell's.
		argv = []string{"sh", "-c", "exec " + cfg.Cmd}
	} else {
		bin, err := buildOperator(ctx, cfg.RepoRoot, cfg.WorkDir)
		if err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p.probeAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		argv = []string{bin,
			"--metrics-bind-address=0",
			"--health-probe-bind-address=" + p.probeAddr,
			"--webhook-port=0",
			"--kube-api-qps=" + strconv.FormatFloat(cfg.QPS, 'f', -1, 64),
			"--kube-api-burst=" + strconv.Itoa(cfg.Burst),
		}
		extra, err := shellwords.Split(cfg.Args)
		if err != nil {
			return nil, fmt.Errorf("--operator-args: %w", err)
		}
		argv = append(argv, extra...)
	}
	logFile, err := os.Create(cfg.LogPath)
	if err != nil {
		return nil, fmt.Errorf("creating the operator's log: %w", err)
	}
	p.logFile = logFile
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+cfg.Kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", strings.Join(argv, " "), err)
	}
	p.pid = p.cmd.Process.Pid
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitReady waits for the readiness probe of the built operator; for another
// command it returns at once (the warm-up job stands in for readiness).
func (p *operatorProc) waitReady(ctx context.Context) error {
	if p.probeAddr == "" {
		return nil
	}
	url := "http://" + p.probeAddr + "/readyz"
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		if err := p.alive(); err != nil {
			return err
		}
		if resp, err := hc.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the operator's readiness at %s: %w (log: %s)", url, ctx.Err(), p.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// alive returns an error, with the end of its log, once the process exited.
func (p *operatorProc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("the operator exited (%v); end of %s:\n%s", p.waitErr, p.logPath, tailFile(p.logPath, 2048))
	default:
		return nil
	}
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *operatorProc) stop(grace time.Duration) error {
	defer p.logFile.Close()
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("the operator did not stop within %s of SIGTERM; killed", grace)
	}
}

// procUsage is a process's CPU time so far and its peak resident memory
// since the last resetPeak (or its start).
type procUsage struct {
	CPU     time.Duration
	PeakRSS uint64 // bytes
}

// readUsage reads /proc/<pid>/stat and /proc/<pid>/status.
func readUsage(pid int) (procUsage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procUsage{}, err
	}
	ticks, err := parseStatCPUTicks(stat)
	if err != nil {
		return procUsage{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procUsage{}, err
	}
	hwm, err := parseStatusKB(status, "VmHWM")
	if err != nil {
		return procUsage{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return procUsage{CPU: time.Duration(ticks) * time.Second / clockTicks, PeakRSS: hwm * 1024}, nil
}

// resetPeak resets VmHWM to the current RSS (writing 5 to clear_refs, Linux
// 4.0 and later) so the next reading is the peak of what follows.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// parseStatCPUTicks returns utime+stime from the contents of /proc/<pid>/stat.
// The command name (field 2) may hold spaces and parentheses: fields are
// counted from the last ')'.
func parseStatCPUTicks(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return utime + stime, nil
}

// parseStatusKB returns a "Name:   123 kB" field of /proc/<pid>/status.
func parseStatusKB(status []byte, name string) (uint64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: unexpected %q", name, strings.TrimSpace(rest))
		}
		return strconv.ParseUint(f[0], 10, 64)
	}
	return 0, fmt.Errorf("no %s line", name)
}

// childPIDs finds the direct children of ppid by command name (comm), e.g.
// the kube-apiserver and etcd envtest started.
func childPIDs(ppid int, names ...string) map[string]int {
	out := map[string]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		comm, parent, ok := parseStatCommPPID(stat)
		if !ok || parent != ppid {
			continue
		}
		for _, n := range names {
			if comm == n {
				out[n] = pid
			}
		}
	}
	return out
}

// parseStatCommPPID returns the command name and parent pid of a
// /proc/<pid>/stat.
func parseStatCommPPID(stat []byte) (string, int, bool) {
	open, closing := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || closing < open {
		return "", 0, false
	}
	fields := strings.Fields(string(stat[closing+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, false
	}
	return string(stat[open+1 : closing]), ppid, true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailFile returns the last n bytes of a file.
func tailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(st.Size()-n, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return err.Error()
	}
	return string(buf)
}

// snapshot is what is measured at the edges of a scenario.
type snapshot struct {
	api     requestCounts // nil when /metrics could not be read
	harness requestCounts
	usage   procUsage
	// peakReset is true when VmHWM was reset right after this reading.
	peakReset bool
	cp        map[string]procUsage
}

// snapshot reads the counters; with resetPeak it then resets the operator's
// peak RSS, so the next snapshot's peak is the scenario's.
func (h *harness) snapshot(ctx context.Context, resetPeakRSS bool) (snapshot, error) {
	var s snapshot
	if h.metricsOK {
		api, err := scrapeRequestTotals(ctx, h.c.admin)
		if err != nil {
			return s, err
		}
		s.api = api
	}
	s.harness = h.c.counter.snapshot()
	u, err := readUsage(h.op.pid)
	if err != nil {
		return s, fmt.Errorf("reading the operator's usage: %w (%v)", err, h.op.alive())
	}
	s.usage = u
	if resetPeakRSS {
		s.peakReset = resetPeak(h.op.pid) == nil
	}
	s.cp = h.controlPlaneUsage()
	return s, nil
}

// controlPlaneUsage reads the usage of the kube-apiserver and etcd the
// harness started.
func (h *harness) controlPlaneUsage() map[string]procUsage {
	out := map[string]procUsage{}
	for name, pid := range h.cpPIDs {
		if u, err := readUsage(pid); err == nil {
			out[name] = u
		}
	}
	return out
}

// operatorRequests is the operator's share of the API server's counters
// between two snapshots: everything on the counted resources minus the
// harness's own requests.
func (h *harness) operatorRequests(before, after snapshot) requestCounts {
	api := after.api.sub(before.api).only(h.countResources)
	own := after.harness.sub(before.harness).only(h.countResources)
	return api.sub(own)
}

// fill sets a result's measurements from the scenario's snapshots.
func (h *harness) fill(res *runResult, before, after snapshot) {
	if before.api != nil && after.api != nil {
		res.Ops, res.OpsKnown = h.operatorRequests(before, after), true
		if h.cfg.verbose {
			api, own := after.api.sub(before.api), after.harness.sub(before.harness)
			for _, k := range api.sortedKeys() {
				logf("  requests %-40s api server %6.0f  harness %6.0f  operator %6.0f", k, api[k], own[k], res.Ops[k])
			}
		}
	}
	res.CPU = after.usage.CPU - before.usage.CPU
	res.PeakRSS = after.usage.PeakRSS
	res.PeakIsLifetime = !before.peakReset
	res.ControlPlaneCPU = cpuSince(before.cp, after.cp)
}

// cpuSince is the CPU time each process used between two readings.
func cpuSince(before, after map[string]procUsage) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, u := range after {
		if b, ok := before[name]; ok {
			out[name] = u.CPU - b.CPU
		}
	}
	return out
}

// waitOperatorQuiet waits until the operator has sent no request for a
// second (its last status writes and events are done), for at most 30s. With
// no API server metrics it sleeps --settle instead.
func (h *harness) waitOperatorQuiet(ctx context.Context) {
	if !h.metricsOK {
		select {
		case <-ctx.Done():
		case <-time.After(h.cfg.settle):
		}
		return
	}
	const poll, quietPolls, limit = 500 * time.Millisecond, 2, 30 * time.Second
	deadline := time.Now().Add(limit)
	last, same := -1.0, 0
	for time.Now().Before(deadline) {
		s, err := h.snapshot(ctx, false)
		if err != nil {
			warnf("waiting for the operator to be quiet: %v", err)
			return
		}
		_, total := h.operatorRequests(snapshot{api: requestCounts{}, harness: requestCounts{}}, s).totals()
		if total == last {
			if same++; same >= quietPolls {
				return
			}
		} else {
			last, same = total, 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
	}
	warnf("the operator was still sending requests after %s; measuring anyway", limit)
}
