package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

var testLimits = runLimits{memoryBytes: 64 << 20, cpuMilli: 500, pids: 300}

func TestCgroupsV1(t *testing.T) {
	root := t.TempDir()
	for _, c := range []string{"memory", "cpu,cpuacct", "pids"} {
		if err := os.MkdirAll(filepath.Join(root, c, "job"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")); err != nil {
		t.Fatal(err)
	}
	p := detectCgroups(root, []byte("8:pids:/\n4:memory:/job\n2:cpu,cpuacct:/job\n0::/\n"), "n1")
	if p.unusable != "" || p.v1["memory"] != filepath.Join(root, "memory/job/paddlejob-n1") || p.v1["cpu"] != filepath.Join(root, "cpu/job/paddlejob-n1") {
		t.Fatalf("detected %+v", p)
	}
	if p.v1["pids"] != filepath.Join(root, "pids/paddlejob-n1") {
		t.Fatalf("pids group %s", p.v1["pids"])
	}
	g, err := p.create("uid-c-0", testLimits, true)
	if err != nil {
		t.Fatal(err)
	}
	mem, cpu, pids := filepath.Join(p.v1["memory"], "uid-c-0"), filepath.Join(p.v1["cpu"], "uid-c-0"), filepath.Join(p.v1["pids"], "uid-c-0")
	if got := readTrim(t, filepath.Join(pids, "pids.max")); got != "300" {
		t.Errorf("pids.max %s, want 300", got)
	}
	if got := readTrim(t, filepath.Join(mem, "memory.limit_in_bytes")); got != "67108864" {
		t.Errorf("memory limit %s, want 67108864", got)
	}
	if q, per := readTrim(t, filepath.Join(cpu, "cpu.cfs_quota_us")), readTrim(t, filepath.Join(cpu, "cpu.cfs_period_us")); q != "50000" || per != "100000" {
		t.Errorf("cpu quota %s per %s, want 50000 per 100000", q, per)
	}
	if s := g.enter(); !strings.Contains(s, "echo $$ > '"+mem+"/cgroup.procs'") || !strings.Contains(s, cpu+"/cgroup.procs") || !strings.Contains(s, pids+"/cgroup.procs") || !strings.HasSuffix(s, `exec "$@"`) {
		t.Errorf("enter script %q", s)
	}
	if g.oomKilled() {
		t.Error("OOM-killed before any kill")
	}
	if err := os.WriteFile(filepath.Join(mem, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !g.oomKilled() {
		t.Error("oom_kill 1 not seen as an OOM kill")
	}
	// The node's own groups go when it stops (here, once emptied of the
	// container's plain files, which a real cgroup does not hold).
	for _, d := range []string{mem, cpu, pids} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	p.remove()
	for _, d := range p.v1 {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the node's group %s is left: %v", d, err)
		}
	}
}

func TestCgroupsV2(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := detectCgroups(root, []byte("0::/user.slice\n"), "n1")
	if p.unusable != "" || p.v2 != filepath.Join(root, "user.slice/paddlejob-n1") {
		t.Fatalf("detected %+v", p)
	}
	if got := readTrim(t, filepath.Join(p.v2, "cgroup.subtree_control")); got != "+memory +cpu +pids" {
		t.Errorf("subtree_control %q", got)
	}
	g, err := p.create("uid-c-0", runLimits{cpuMilli: 2000, pids: 4096}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(p.v2, "uid-c-0", "cpu.max")); got != "200000 100000" {
		t.Errorf("cpu.max %q", got)
	}
	if got := readTrim(t, filepath.Join(p.v2, "uid-c-0", "pids.max")); got != "4096" {
		t.Errorf("pids.max %q", got)
	}
	if _, err := os.Stat(filepath.Join(p.v2, "uid-c-0", "memory.max")); err == nil {
		t.Error("memory.max written without a memory limit")
	}
	if g.memory != filepath.Join(p.v2, "uid-c-0") {
		t.Errorf("memory accounting read from %s", g.memory)
	}
}

// Without a cgroup the node may write, a container with limits of its own is
// refused, saying why and what to do; one with only the node's defaults
// runs without a group.
func TestCgroupsUnusableRefuseLimits(t *testing.T) {
	p := detectCgroups(filepath.Join(t.TempDir(), "absent"), []byte("0::/\n"), "n1")
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
