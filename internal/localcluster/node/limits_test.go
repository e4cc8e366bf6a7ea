package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The cgroup files a container's limits become, on directory trees laid out
// as cgroup v1 and v2 mounts are (the kernel's files replaced by plain ones).

func readTrim(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// fakeCgroup makes dir with empty files named as the kernel's.
func fakeCgroup(t *testing.T, dir string, files ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	testLimits     = runLimits{memoryBytes: 64 << 20, cpuMilli: 500, pids: 300}
	testNodeLimits = NodeLimits{MemoryBytes: 1 << 30, Pids: 5000}
)

func TestNodeLimitsOf(t *testing.T) {
	gi := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(n<<30, resource.BinarySI)}
	}
	for _, tc := range []struct {
		name                  string
		allocatable           corev1.ResourceList
		host, pidMax, threads int64
		wantMemory, wantPids  int64
	}{
		{"the host's capacity", gi(23), 23 << 30, 32768, 192735, 23 << 30, 16384},
		{"--capacity advertising more than the host has", gi(100), 23 << 30, 4194304, 192735, 23 << 30, 96367},
		{"--capacity advertising less", gi(8), 23 << 30, 32768, 192735, 8 << 30, 16384},
		{"nothing known", nil, 0, 0, 0, 0, 0},
	} {
		got := nodeLimitsOf(tc.allocatable, tc.host, tc.pidMax, tc.threads)
		if got.MemoryBytes != tc.wantMemory || got.Pids != tc.wantPids {
			t.Errorf("%s: %+v, want memory %d, pids %d", tc.name, got, tc.wantMemory, tc.wantPids)
		}
	}
}

func TestCapMemory(t *testing.T) {
	node := NodeLimits{MemoryBytes: 23 << 30}
	for _, tc := range []struct {
		limit, want int64
		capped      bool
	}{
		{100 << 30, 23 << 30, true},
		{23 << 30, 23 << 30, false},
		{64 << 20, 64 << 20, false},
		{0, 0, false},
	} {
		if got, capped := node.capMemory(tc.limit); got != tc.want || capped != tc.capped {
			t.Errorf("capMemory(%d) = %d, %v; want %d, %v", tc.limit, got, capped, tc.want, tc.capped)
		}
	}
	if got, capped := (NodeLimits{}).capMemory(100 << 30); got != 100<<30 || capped {
		t.Errorf("no node cap: capMemory = %d, %v; want the limit as asked", got, capped)
	}
	c := &corev1.Container{Name: "big", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Gi")}}}
	if got, want := memoryCappedMessage(c, 23<<30), `container "big": limits.memory 100Gi is above the node's allocatable memory (at most the host's): its cgroup's limit is 23Gi (24696061952 bytes)`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

func TestCgroupsV1(t *testing.T) {
	root := t.TempDir()
	mem, cpu, pids := filepath.Join(root, "memory/job/paddlejob-n1"), filepath.Join(root, "cpu/job/paddlejob-n1"), filepath.Join(root, "pids/paddlejob-n1")
	fakeCgroup(t, filepath.Join(root, "memory/job"), "tasks")
	fakeCgroup(t, filepath.Join(root, "cpu,cpuacct/job"), "tasks")
	fakeCgroup(t, filepath.Join(root, "pids"), "tasks")
	if err := os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")); err != nil {
		t.Fatal(err)
	}
	fakeCgroup(t, mem, "memory.memsw.limit_in_bytes")
	fakeCgroup(t, pids)
	p := detectCgroups(root, []byte("8:pids:/\n4:memory:/job\n2:cpu,cpuacct:/job\n0::/\n"), "n1", testNodeLimits)
	if p.unusable != "" || !p.swap {
		t.Fatalf("detected %+v", p)
	}
	// The node's group holds all its containers, capped at the node's.
	if got := readTrim(t, filepath.Join(mem, "memory.limit_in_bytes")); got != "1073741824" {
		t.Errorf("the node's group's memory limit %s, want its allocatable 1073741824", got)
	}
	if got := readTrim(t, filepath.Join(pids, "pids.max")); got != "5000" {
		t.Errorf("the node's group's pids.max %s, want 5000", got)
	}
	for _, d := range []string{mem, cpu, pids} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("the node's group: %v", err)
		}
	}
	for _, d := range []string{mem, cpu, pids} {
		fakeCgroup(t, filepath.Join(d, "uid-c-0"), "tasks", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.oom_control", "memory.stat",
			"cpu.cfs_period_us", "cpu.cfs_quota_us", "pids.max")
	}
	g, err := p.create("uid-c-0", testLimits, true)
	if err != nil {
		t.Fatal(err)
	}
	mem, cpu, pids = filepath.Join(mem, "uid-c-0"), filepath.Join(cpu, "uid-c-0"), filepath.Join(pids, "uid-c-0")
	if got := readTrim(t, filepath.Join(pids, "pids.max")); got != "300" {
		t.Errorf("pids.max %s, want 300", got)
	}
	if got, sw := readTrim(t, filepath.Join(mem, "memory.limit_in_bytes")), readTrim(t, filepath.Join(mem, "memory.memsw.limit_in_bytes")); got != "67108864" || sw != got {
		t.Errorf("memory limit %s, with swap %s, want 67108864 for both", got, sw)
	}
	if q, per := readTrim(t, filepath.Join(cpu, "cpu.cfs_quota_us")), readTrim(t, filepath.Join(cpu, "cpu.cfs_period_us")); q != "50000" || per != "100000" {
		t.Errorf("cpu quota %s per %s, want 50000 per 100000", q, per)
	}
	startFromThread(t, g, root, mem, cpu, pids)
	if g.oomKilled() {
		t.Error("OOM-killed before any kill")
	}
	if err := os.WriteFile(filepath.Join(mem, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !g.oomKilled() {
		t.Error("oom_kill 1 not seen as an OOM kill")
	}
	// The groups go when the run ends, and the node's when it stops.
	g.remove()
	p.remove()
	for _, d := range []string{mem, cpu, pids, filepath.Dir(mem), filepath.Dir(cpu), filepath.Dir(pids)} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("group %s is left: %v", d, err)
		}
	}
}

// startFromThread starts a process in a v1 group as the spawner does, from a
// locked thread: the thread joined the group in every hierarchy (the child
// was forked there), then went back to the node's own groups.
func startFromThread(t *testing.T, g *containerCgroup, root string, groups ...string) {
	t.Helper()
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	var tid int
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid = unix.Gettid()
		started <- g.start(cmd)
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, d := range append(groups, filepath.Join(root, "memory/job"), filepath.Join(root, "cpu/job"), filepath.Join(root, "pids")) {
		if got := readTrim(t, filepath.Join(d, "tasks")); got != strconv.Itoa(tid) {
			t.Errorf("%s/tasks holds %q, want the spawning thread %d", d, got, tid)
		}
	}
}

func TestCgroupsV2(t *testing.T) {
	root := t.TempDir()
	fakeCgroup(t, root, "cgroup.controllers", "cgroup.subtree_control")
	fakeCgroup(t, filepath.Join(root, "user.slice"), "cgroup.subtree_control")
	parent := filepath.Join(root, "user.slice/paddlejob-n1")
	fakeCgroup(t, parent, "cgroup.subtree_control")
	p := detectCgroups(root, []byte("0::/user.slice\n"), "n1", testNodeLimits)
	if p.unusable != "" || p.v2Dir != parent || p.swap {
		t.Fatalf("detected %+v", p)
	}
	// The node's group delegates the controllers to the parent, which
	// delegates them to the containers' groups.
	if got := readTrim(t, filepath.Join(root, "user.slice/cgroup.subtree_control")); got != "+cpu +memory +pids" {
		t.Errorf("the node's subtree_control %q", got)
	}
	dir := filepath.Join(parent, "uid-c-0")
	fakeCgroup(t, dir, "cpu.max", "pids.max")
	g, err := p.create("uid-c-0", runLimits{cpuMilli: 2000, pids: 4096}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(parent, "cgroup.subtree_control")); got != "+cpu +memory +pids" {
		t.Errorf("the parent's subtree_control %q", got)
	}
	if got := readTrim(t, filepath.Join(dir, "cpu.max")); got != "200000 100000" {
		t.Errorf("cpu.max %q", got)
	}
	if got := readTrim(t, filepath.Join(dir, "pids.max")); got != "4096" {
		t.Errorf("pids.max %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.max")); err == nil {
		t.Error("memory.max written without a memory limit")
	}
	if g.oomKilled() {
		t.Error("OOM-killed before any kill")
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !g.oomKilled() {
		t.Error("oom_kill 1 in memory.events not seen as an OOM kill")
	}
	g.remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("group %s is left: %v", dir, err)
	}
	// With swap accounted, memory and swap are limited.
	if err := os.WriteFile(filepath.Join(parent, "memory.swap.max"), []byte("max\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = detectCgroups(root, []byte("0::/user.slice\n"), "n1", NodeLimits{})
	fakeCgroup(t, filepath.Join(parent, "uid-c-1"), "memory.max", "memory.swap.max")
	if _, err := p.create("uid-c-1", runLimits{memoryBytes: 64 << 20}, true); err != nil || !p.swap {
		t.Fatalf("create: %v; detected swap %v", err, p.swap)
	}
	if m, sw := readTrim(t, filepath.Join(parent, "uid-c-1/memory.max")), readTrim(t, filepath.Join(parent, "uid-c-1/memory.swap.max")); m != "67108864" || sw != "0" {
		t.Errorf("memory.max %q, memory.swap.max %q; want 67108864 and 0", m, sw)
	}
}

// Where the node's group may not delegate the controllers (the kernel
// refuses the write; here its file is missing), the node says so.
func TestCgroupsV2NotDelegated(t *testing.T) {
	root := t.TempDir()
	fakeCgroup(t, root, "cgroup.controllers")
	p := detectCgroups(root, []byte("0::/\n"), "n1", NodeLimits{})
	if !strings.Contains(p.unusable, "delegate them to the node's cgroup") {
		t.Errorf("unusable %q", p.unusable)
	}
	if _, err := os.Stat(filepath.Join(root, "paddlejob-n1")); !os.IsNotExist(err) {
		t.Errorf("the unusable group is left: %v", err)
	}
}

// Without a cgroup the node may write, a container with limits of its own is
// refused, saying why and what to do; one with only the node's defaults
// runs without a group.
func TestCgroupsUnusableRefuseLimits(t *testing.T) {
	p := detectCgroups(filepath.Join(t.TempDir(), "absent"), []byte("0::/\n"), "n1", NodeLimits{})
	if p.unusable == "" {
		t.Fatal("an absent cgroup mount was found usable")
	}
	_, err := p.create("uid-c-0", testLimits, true)
	if err == nil || !strings.Contains(err.Error(), "cannot enforce resources.limits") {
		t.Errorf("create: %v", err)
	}
	if g, err := p.create("uid-c-0", testLimits, false); g != nil || err != nil {
		t.Errorf("defaults only: group %v, error %v; want neither", g, err)
	}
}

// A container's own limits win over the node's defaults; the pids limit is
// always the node's.
func TestLimitsOf(t *testing.T) {
	defaults := DefaultLimits{MemoryBytes: 8 << 30, Pids: 4096}
	for _, tc := range []struct {
		name   string
		limits corev1.ResourceList
		want   runLimits
	}{
		{"none", nil, runLimits{memoryBytes: 8 << 30, pids: 4096}},
		{"memory", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}, runLimits{memoryBytes: 64 << 20, pids: 4096}},
		{"cpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}, runLimits{memoryBytes: 8 << 30, cpuMilli: 1500, pids: 4096}},
		{"both", testResourceList, runLimits{memoryBytes: 64 << 20, cpuMilli: 500, pids: 4096}},
	} {
		c := &corev1.Container{Resources: corev1.ResourceRequirements{Limits: tc.limits}}
		if got := defaults.limitsOf(c); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := (DefaultLimits{}).limitsOf(&corev1.Container{}); got != (runLimits{}) {
		t.Errorf("no defaults: %+v, want no limits", got)
	}
}

var testResourceList = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("500m")}
