package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resource limits: every run of a container is in a cgroup of its own, as a
// kubelet's would be, so that a runaway pod cannot take the machine (nor
// etcd with it): the kernel kills it when it exceeds its memory (the
// container ends OOMKilled), throttles it to its CPU limit, and refuses it
// a process or thread past its pids limit (a fork bomb stops there). The
// memory limit is the container's own, else the node's default; the pids
// limit is the node's (Kubernetes has no per-pod field; the kubelet's
// --pod-max-pids is the same kind of setting). The node makes its groups
// under its own cgroup, in cgroup v2 where the node may enable the memory,
// cpu and pids controllers for its children, else in the cgroup v1 memory,
// cpu and pids hierarchies. Where it can do neither, a container with limits
// of its own is refused, saying why: its limits would be a promise the node
// cannot keep; one without runs unlimited (a rootless node without
// delegation). The groups are made, joined, read and removed with
// containerd's cgroups library.
//
// The parent group, which holds every container's, is capped too, at the
// node's allocatable memory and a share of the kernel's pids (NodeLimits):
// however many pods run, together they cannot take the machine's memory or
// process table from the control plane. A container's memory limit above
// the node's is lowered to it, with an event saying so: a limit the machine
// cannot give is no limit.

// cgroupsRoot is where the host mounts its cgroups.
const cgroupsRoot = "/sys/fs/cgroup"

// cgroupParent is where the node makes its containers' groups.
type cgroupParent struct {
	// v2 is the parent group in the unified hierarchy; nil in v1.
	v2 *cgroup2.Manager
	// v2Dir is v2's directory.
	v2Dir string
	// v1 is the parent group in the memory, cpu and pids hierarchies, in v1.
	v1 cgroup1.Cgroup
	// v1Path is a path below the node's own group in each v1 hierarchy,
	// v1Leaf the parent's, v1Hierarchy those hierarchies.
	v1Path      func(suffix string) cgroup1.Path
	v1Leaf      string
	v1Hierarchy cgroup1.InitOpts
	// home is the node's own group in v1, where the thread that starts a
	// container returns (containerCgroup.start).
	home cgroup1.Cgroup
	// swap says whether the kernel accounts swap: then a container's swap
	// is limited too (to none), else there is none to bypass the limit with.
	swap bool
	// unusable says why the node cannot limit resources; the rest is then
	// empty.
	unusable string
}

// v1Controllers are the cgroup v1 hierarchies a container's group is
// in.
var v1Controllers = []string{"memory", "cpu", "pids"}

// NodeLimits cap the node's parent group: all its containers together.
type NodeLimits struct {
	// MemoryBytes is the node's allocatable memory, at most the host's; 0
	// for no cap.
	MemoryBytes int64
	// Pids caps the processes and threads of all the node's containers; 0
	// for no cap.
	Pids int64
}

// nodeLimitsOf are the node's caps: its allocatable memory, but no more than
// the host has (--capacity may advertise more), and half of what the kernel
// gives out of pids and threads (pid_max, threads-max), the other half left
// to the control plane and the rest of the machine.
func nodeLimitsOf(allocatable corev1.ResourceList, hostMemory, pidMax, threadsMax int64) NodeLimits {
	var l NodeLimits
	if q, ok := allocatable[corev1.ResourceMemory]; ok {
		l.MemoryBytes = q.Value()
	}
	if hostMemory > 0 && (l.MemoryBytes == 0 || hostMemory < l.MemoryBytes) {
		l.MemoryBytes = hostMemory
	}
	if n := min(pidMax, threadsMax); n > 0 {
		l.Pids = n / 2
	}
	return l
}

// readKernelCount reads a number from a /proc/sys file; 0 when it cannot.
func readKernelCount(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// hostNodeLimits are nodeLimitsOf the host's memory and kernel settings.
func hostNodeLimits(allocatable corev1.ResourceList) NodeLimits {
	mem, _ := memTotal()
	return nodeLimitsOf(allocatable, mem, readKernelCount("/proc/sys/kernel/pid_max"), readKernelCount("/proc/sys/kernel/threads-max"))
}

// capMemory is a container's memory limit lowered to the node's cap;
// capped says it was above it.
func (l NodeLimits) capMemory(limit int64) (_ int64, capped bool) {
	if l.MemoryBytes > 0 && limit > l.MemoryBytes {
		return l.MemoryBytes, true
	}
	return limit, false
}

// detectCgroups finds where the node may make groups: root is the cgroup
// mount, self the content of /proc/self/cgroup; node caps the group that
// holds all of the node's containers.
func detectCgroups(root string, self []byte, nodeName string, node NodeLimits) *cgroupParent {
	own, unified, err := cgroups.ParseCgroupFromReaderUnified(bytes.NewReader(bytes.TrimSpace(self)))
	if err != nil {
		return &cgroupParent{unusable: fmt.Sprintf("reading /proc/self/cgroup: %v", err)}
	}
	leaf := "paddlejob-" + nodeName
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return detectCgroup2(root, filepath.Join("/", unified, leaf), node)
	}
	return detectCgroup1(root, own, leaf, node)
}

// detectCgroup2 makes the node's parent group in cgroup v2, enabling the
// memory, cpu and pids controllers for it in the node's group: that fails
// unless the node's group may delegate them.
func detectCgroup2(root, group string, node NodeLimits) *cgroupParent {
	m, err := cgroup2.NewManager(root, group, runLimits{memoryBytes: node.MemoryBytes, pids: node.Pids}.cgroup2(false))
	if err != nil {
		return &cgroupParent{unusable: fmt.Sprintf("cgroup v2: cannot create %s with the memory, cpu and pids controllers (delegate them to the node's cgroup): %v", group, err)}
	}
	dir := filepath.Join(root, group)
	_, noSwap := os.Stat(filepath.Join(dir, "memory.swap.max"))
	return &cgroupParent{v2: m, v2Dir: dir, swap: noSwap == nil}
}

// detectCgroup1 makes the node's parent groups in the cgroup v1 memory, cpu
// and pids hierarchies, below the node's own group in each (own).
func detectCgroup1(root string, own map[string]string, leaf string, node NodeLimits) *cgroupParent {
	for _, c := range v1Controllers {
		if _, ok := own[c]; !ok {
			return &cgroupParent{unusable: fmt.Sprintf("no cgroup v1 %s hierarchy in /proc/self/cgroup and no cgroup v2", c)}
		}
	}
	p := &cgroupParent{
		v1Leaf: leaf,
		v1Path: func(suffix string) cgroup1.Path {
			return func(c cgroup1.Name) (string, error) { return filepath.Join(own[string(c)], suffix), nil }
		},
		v1Hierarchy: cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) {
			return []cgroup1.Subsystem{cgroup1.NewMemory(root), cgroup1.NewCpu(root), cgroup1.NewPids(root)}, nil
		}),
	}
	var err error
	if p.v1, err = cgroup1.New(p.v1Path(leaf), runLimits{memoryBytes: node.MemoryBytes, pids: node.Pids}.cgroup1(false), p.v1Hierarchy); err != nil {
		return &cgroupParent{unusable: fmt.Sprintf("cannot create cgroup %s: %v", leaf, err)}
	}
	// The thread that starts a container must be able to return here: try
	// now, with a thread already here.
	if p.home, err = cgroup1.Load(p.v1Path(""), p.v1Hierarchy); err == nil {
		runtime.LockOSThread()
		err = p.home.AddTask(cgroup1.Process{Pid: unix.Gettid()})
		runtime.UnlockOSThread()
	}
	if err != nil {
		_ = p.v1.Delete()
		return &cgroupParent{unusable: fmt.Sprintf("cgroup v1: the node cannot move its threads into its own cgroups: %v", err)}
	}
	_, noSwap := os.Stat(filepath.Join(root, "memory", own["memory"], leaf, "memory.memsw.limit_in_bytes"))
	p.swap = noSwap == nil
	return p
}

// remove deletes the node's parent groups, once empty: the groups of its
// containers are removed as each run ends.
func (p *cgroupParent) remove() {
	switch {
	case p == nil:
	case p.v2 != nil:
		_ = p.v2.Delete() // a group still holding a container's stays, harmlessly
	case p.v1 != nil:
		_ = p.v1.Delete()
	}
}

// containerCgroup is the group of one run of a container.
type containerCgroup struct {
	// v2 is the group in cgroup v2, v2Dir its directory.
	v2    *cgroup2.Manager
	v2Dir string
	// v1 is the group in cgroup v1, home the node's own group.
	v1, home cgroup1.Cgroup
}

// hasLimits reports whether a container asks for limits the node enforces.
func hasLimits(c *corev1.Container) bool {
	_, mem := c.Resources.Limits[corev1.ResourceMemory]
	_, cpu := c.Resources.Limits[corev1.ResourceCPU]
	return mem || cpu
}

// DefaultLimits are what a container's group holds when the container sets
// no limit of its own.
type DefaultLimits struct {
	// MemoryBytes is the memory limit of a container without one; 0 for
	// none.
	MemoryBytes int64
	// Pids caps the processes and threads of each container (the kernel's
	// pids.max counts threads); 0 for no cap.
	Pids int64
}

// runLimits are the limits of one run's group: 0 is none.
type runLimits struct {
	memoryBytes, cpuMilli, pids int64
}

// limitsOf are a container's limits: its own memory and CPU limits, the
// defaults for what it leaves unset.
func (d DefaultLimits) limitsOf(c *corev1.Container) runLimits {
	l := runLimits{memoryBytes: d.MemoryBytes, pids: d.Pids}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		l.memoryBytes = q.Value()
	}
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		l.cpuMilli = q.MilliValue()
	}
	return l
}

// create makes a group named name holding limits. own says whether the
// container asked for limits itself: where the node cannot make groups, such
// a container is refused, and any other runs without a group (nil).
func (p *cgroupParent) create(name string, limits runLimits, own bool) (*containerCgroup, error) {
	if p == nil {
		p = &cgroupParent{unusable: "no cgroups configured"}
	}
	if p.unusable != "" {
		if !own {
			return nil, nil
		}
		return nil, fmt.Errorf("the node cannot enforce resources.limits (%s): remove the memory and cpu limits, or run the node where it may create cgroups", p.unusable)
	}
	if p.v2 != nil {
		g, err := p.v2.NewChild(name, limits.cgroup2(p.swap))
		if err != nil {
			return nil, fmt.Errorf("creating cgroup %s: %w", filepath.Join(p.v2Dir, name), err)
		}
		return &containerCgroup{v2: g, v2Dir: filepath.Join(p.v2Dir, name)}, nil
	}
	path := p.v1Path(filepath.Join(p.v1Leaf, name))
	g, err := cgroup1.New(path, limits.cgroup1(p.swap), p.v1Hierarchy)
	if err != nil {
		if partial, lerr := cgroup1.Load(path, p.v1Hierarchy); lerr == nil {
			_ = partial.Delete()
		}
		return nil, fmt.Errorf("creating cgroup %s: %w", name, err)
	}
	return &containerCgroup{v1: g, home: p.home}, nil
}

// cfsPeriod is the CFS period of CPU limits, in µs, as the kubelet's.
const cfsPeriod = 100000

// cfsQuota is the CFS quota of a CPU limit in millicores: the share of each
// period the group may run, at least the kernel's 1 ms.
func cfsQuota(milli int64) int64 { return max(milli*cfsPeriod/1000, 1000) }

// cgroup2 are the limits as cgroup v2 resources. The memory, cpu and pids
// controllers are enabled even without a limit: the group's memory.events
// tells an OOM kill.
func (l runLimits) cgroup2(swap bool) *cgroup2.Resources {
	r := &cgroup2.Resources{Memory: &cgroup2.Memory{}, CPU: &cgroup2.CPU{}, Pids: &cgroup2.Pids{Max: l.pids}}
	if l.memoryBytes > 0 {
		r.Memory.Max = &l.memoryBytes
		if swap {
			r.Memory.Swap = new(int64)
		}
	}
	if l.cpuMilli > 0 {
		quota, period := cfsQuota(l.cpuMilli), uint64(cfsPeriod)
		r.CPU.Max = cgroup2.NewCPUMax(&quota, &period)
	}
	return r
}

// cgroup1 are the limits as cgroup v1 resources; memory+swap is limited to
// memory alone.
func (l runLimits) cgroup1(swap bool) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if l.memoryBytes > 0 {
		r.Memory = &specs.LinuxMemory{Limit: &l.memoryBytes}
		if swap {
			r.Memory.Swap = &l.memoryBytes
		}
	}
	if l.cpuMilli > 0 {
		quota, period := cfsQuota(l.cpuMilli), uint64(cfsPeriod)
		r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	if l.pids > 0 {
		r.Pids = &specs.LinuxPids{Limit: &l.pids}
	}
	return r
}

// start starts cmd inside the group, from the spawner's locked thread
// (runtime.go), so that the sandbox and everything it forks is limited from
// its first instruction. In cgroup v2 the process is cloned into the group.
// cgroup v1 has no such clone: a child starts in the groups of the thread
// that forks it, so the thread joins the group, forks and goes home. (The Go
// runtime never clones its own threads from a locked one, so none of them
// is left in the group.)
func (g *containerCgroup) start(cmd *exec.Cmd) error {
	switch {
	case g == nil:
		return cmd.Start()
	case g.v2 != nil:
		dir, err := os.Open(g.v2Dir)
		if err != nil {
			return fmt.Errorf("opening cgroup: %w", err)
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(dir.Fd())
		return cmd.Start()
	}
	thread := cgroup1.Process{Pid: unix.Gettid()}
	err := g.v1.AddTask(thread)
	if err == nil {
		err = cmd.Start()
	} else {
		err = fmt.Errorf("joining the container's cgroup: %w", err)
	}
	if herr := g.home.AddTask(thread); herr != nil {
		// Never seen: detectCgroups tried the move. A process started
		// from the wrong group is stopped rather than left running.
		if err == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return errors.Join(err, fmt.Errorf("returning to the node's cgroup: %w", herr))
	}
	return err
}

// oomKilled reports whether the kernel killed a process of the group for
// exceeding its memory limit.
func (g *containerCgroup) oomKilled() bool {
	if g.v2 != nil {
		st, err := g.v2.Stat()
		return err == nil && st.MemoryEvents != nil && st.MemoryEvents.OomKill > 0
	}
	st, err := g.v1.Stat(cgroup1.IgnoreNotExist)
	return err == nil && st.MemoryOomControl != nil && st.MemoryOomControl.OomKill > 0
}

// remove deletes the group once its processes are gone (a cgroup with
// processes cannot be removed; they end moments after the sandbox's init).
func (g *containerCgroup) remove() {
	for i := 0; i < 20; i++ {
		var err error
		if g.v2 != nil {
			err = g.v2.Delete()
		} else {
			err = g.v1.Delete()
		}
		if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, cgroup1.ErrCgroupDeleted) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// defaultPodMemoryLimit is half the host's memory: no one pod takes the
// machine (and etcd with it); 0 (none) where the host's memory is unknown.
func defaultPodMemoryLimit() int64 {
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		return 0
	}
	return int64(info.Totalram) * int64(info.Unit) / 2
}

// reasonMemoryLimitCapped is the event of a container whose memory limit
// the node lowered to its own.
const reasonMemoryLimitCapped = "MemoryLimitCapped"

// memoryCappedMessage says which limit was lowered, and to what.
func memoryCappedMessage(c *corev1.Container, capped int64) string {
	asked := c.Resources.Limits[corev1.ResourceMemory]
	return fmt.Sprintf("container %q: limits.memory %s is above the node's allocatable memory (at most the host's): its cgroup's limit is %s (%d bytes)",
		c.Name, asked.String(), resource.NewQuantity(capped, resource.BinarySI).String(), capped)
}
