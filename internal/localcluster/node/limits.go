package node

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
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
// delegation).

// cgroupsRoot is where the host mounts its cgroups.
const cgroupsRoot = "/sys/fs/cgroup"

// cgroupParent is where the node makes its containers' groups.
type cgroupParent struct {
	// v2 is the parent group in the unified hierarchy; empty in v1.
	v2 string
	// v1 are the parent groups by controller (memory, cpu, pids), in v1.
	v1 map[string]string
	// unusable says why the node cannot limit resources; the rest is then
	// empty.
	unusable string
}

// detectCgroups finds where the node may make groups: root is the cgroup
// mount, self the content of /proc/self/cgroup.
func detectCgroups(root string, self []byte, nodeName string) *cgroupParent {
	paths := map[string]string{} // controller ("" for v2) -> the node's group
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	leaf := "paddlejob-" + nodeName
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		// cgroup v2 alone: children get the controllers only where the
		// node's group delegates them.
		dir := filepath.Join(root, paths[""], leaf)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return &cgroupParent{unusable: fmt.Sprintf("cannot create cgroup %s: %v", dir, err)}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +cpu +pids"), 0o644); err != nil {
			return &cgroupParent{unusable: fmt.Sprintf("cgroup v2: cannot enable the memory, cpu and pids controllers in %s (delegate them to the node's cgroup): %v", dir, err)}
		}
		return &cgroupParent{v2: dir}
	}
	p := &cgroupParent{v1: map[string]string{}}
	for _, c := range []string{"memory", "cpu", "pids"} {
		own, ok := paths[c]
		if !ok {
			return &cgroupParent{unusable: fmt.Sprintf("no cgroup v1 %s hierarchy in /proc/self/cgroup and no cgroup v2", c)}
		}
		dir := filepath.Join(root, c, own, leaf)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return &cgroupParent{unusable: fmt.Sprintf("cannot create cgroup %s: %v", dir, err)}
		}
		p.v1[c] = dir
	}
	return p
}

// remove deletes the node's parent groups, once empty: the groups of its
// containers are removed as each run ends.
func (p *cgroupParent) remove() {
	if p == nil {
		return
	}
	dirs := slices.Collect(maps.Values(p.v1))
	if p.v2 != "" {
		dirs = append(dirs, p.v2)
	}
	for _, d := range dirs {
		_ = os.Remove(d) // a group still holding a container's stays, harmlessly
	}
}

// containerCgroup is the group of one run of a container.
type containerCgroup struct {
	// dirs are its directories: one in v2, memory's, cpu's and pids' in v1.
	dirs []string
	// memory is the directory holding its memory accounting.
	memory string
	v2     bool
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
	var writes [][2]string // file, value
	g := &containerCgroup{}
	if p.v2 != "" {
		dir := filepath.Join(p.v2, name)
		g.dirs, g.memory, g.v2 = []string{dir}, dir, true
		if limits.memoryBytes > 0 {
			writes = append(writes, [2]string{filepath.Join(dir, "memory.max"), strconv.FormatInt(limits.memoryBytes, 10)},
				[2]string{filepath.Join(dir, "memory.swap.max"), "0"})
		}
		if limits.cpuMilli > 0 {
			writes = append(writes, [2]string{filepath.Join(dir, "cpu.max"), fmt.Sprintf("%d %d", cfsQuota(limits.cpuMilli), cfsPeriod)})
		}
		if limits.pids > 0 {
			writes = append(writes, [2]string{filepath.Join(dir, "pids.max"), strconv.FormatInt(limits.pids, 10)})
		}
	} else {
		mem, cpu, pids := filepath.Join(p.v1["memory"], name), filepath.Join(p.v1["cpu"], name), filepath.Join(p.v1["pids"], name)
		g.dirs, g.memory = []string{mem, cpu, pids}, mem
		if limits.memoryBytes > 0 {
			v := strconv.FormatInt(limits.memoryBytes, 10)
			writes = append(writes, [2]string{filepath.Join(mem, "memory.limit_in_bytes"), v},
				[2]string{filepath.Join(mem, "memory.memsw.limit_in_bytes"), v})
		}
		if limits.cpuMilli > 0 {
			writes = append(writes, [2]string{filepath.Join(cpu, "cpu.cfs_period_us"), strconv.Itoa(cfsPeriod)},
				[2]string{filepath.Join(cpu, "cpu.cfs_quota_us"), strconv.FormatInt(cfsQuota(limits.cpuMilli), 10)})
		}
		if limits.pids > 0 {
			writes = append(writes, [2]string{filepath.Join(pids, "pids.max"), strconv.FormatInt(limits.pids, 10)})
		}
	}
	for _, d := range g.dirs {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			g.remove()
			return nil, fmt.Errorf("creating cgroup %s: %w", d, err)
		}
	}
	for _, w := range writes {
		if err := os.WriteFile(w[0], []byte(w[1]), 0o644); err != nil {
			if strings.Contains(w[0], "swap") || strings.Contains(w[0], "memsw") {
				continue // no swap accounting: nothing to bypass the limit with
			}
			g.remove()
			return nil, fmt.Errorf("setting %s to %s: %w", w[0], w[1], err)
		}
	}
	return g, nil
}

// cfsPeriod is the CFS period of CPU limits, in µs, as the kubelet's.
const cfsPeriod = 100000

// cfsQuota is the CFS quota of a CPU limit in millicores: the share of each
// period the group may run, at least the kernel's 1 ms.
func cfsQuota(milli int64) int64 { return max(milli*cfsPeriod/1000, 1000) }

// enter is a shell script that moves itself into the group, then runs its
// arguments: the sandbox starts inside the group, so every process of it is
// limited from its first instruction. The directories are the node's own
// (pod UIDs and container names), quoted.
func (g *containerCgroup) enter() string {
	var b strings.Builder
	for _, d := range g.dirs {
		fmt.Fprintf(&b, "echo $$ > '%s/cgroup.procs' || exit 125; ", d)
	}
	b.WriteString(`exec "$@"`)
	return b.String()
}

// oomKilled reports whether the kernel killed a process of the group for
// exceeding its memory limit.
func (g *containerCgroup) oomKilled() bool {
	file := "memory.oom_control"
	if g.v2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(g.memory, file))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
			return true
		}
	}
	return false
}

// remove deletes the group once its processes are gone (a cgroup with
// processes cannot be removed; they end moments after the sandbox's init).
func (g *containerCgroup) remove() {
	for _, d := range g.dirs {
		for i := 0; i < 20; i++ {
			if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
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
