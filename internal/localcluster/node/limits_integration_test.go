//go:build integration

package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Resource limits on the host's real cgroups (v1 or v2, whichever the
// machine has): what the kernel enforces and reports for a container run.

// TestCgroupHoldsEveryProcessOfARun runs a container with limits and looks at
// it from the host: every process from bwrap down is in the run's group,
// which holds the limits; no thread of the node stays there; the group goes
// with the pod.
func TestCgroupHoldsEveryProcessOfARun(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	marker := strconv.Itoa(700000 + int(time.Now().UnixNano()%99999))
	pod := n.shellPod(ns, "limited", "exec sleep "+marker)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("500m")}
	pod = n.create(t, pod)
	n.waitPhase(t, ns, pod.Name, corev1.PodRunning)
	waitForProcesses(t, marker, 1)
	sleeper := processesWith(marker)[0]

	parent := n.provider.deps.cgroups
	if parent.unusable != "" {
		t.Fatalf("the node cannot make cgroups here: %s", parent.unusable)
	}
	groups := cgroupOf(t, fmt.Sprintf("/proc/%d/cgroup", sleeper), parent)
	for _, g := range groups {
		if name := filepath.Base(g); !strings.HasPrefix(name, string(pod.UID)+"-main-") {
			t.Errorf("the container runs in %s, not in a group of its run", g)
		}
	}
	for pid := sleeper; pid != os.Getpid(); pid = parentPID(t, pid) {
		if got := cgroupOf(t, fmt.Sprintf("/proc/%d/cgroup", pid), parent); !equal(got, groups) {
			t.Errorf("process %d (%s) is in %v, not in the run's group %v", pid, commandOf(pid), got, groups)
		}
	}
	// A node's spawner thread ends with its node (it stays locked), and tests
	// in parallel stop theirs: a thread may go between the listing and the read.
	threads, _ := filepath.Glob("/proc/self/task/*/cgroup")
	for _, th := range threads {
		got, err := readCgroupOf(th, parent)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if equal(got, groups) {
			t.Errorf("the node's thread %s is left in the run's group", th)
		}
	}
	checkLimitFiles(t, parent, groups)

	if err := n.client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, n, ns, pod.Name, 30*time.Second)
	awaitRemoved(t, groups)
}

// checkLimitFiles reads the limits of a run's groups (64Mi, 500m and the
// node's pids limit) as the kernel holds them.
func checkLimitFiles(t *testing.T, parent *cgroupParent, groups map[string]string) {
	t.Helper()
	want := map[string]string{"memory.limit_in_bytes": "67108864", "cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000", "pids.max": "4096"}
	if parent.v2 != nil {
		want = map[string]string{"memory.max": "67108864", "cpu.max": "50000 100000", "pids.max": "4096"}
	}
	for file, value := range want {
		dir := groups[""]
		if parent.v2 == nil {
			dir = groups[strings.SplitN(file, ".", 2)[0]]
		}
		data, err := os.ReadFile(filepath.Join(dir, file))
		if got := strings.TrimSpace(string(data)); err != nil || got != value {
			t.Errorf("%s: %q (%v), want %s", filepath.Join(dir, file), got, err, value)
		}
	}
}

// TestOOMKilledAtTheMemoryLimit runs a program that takes 512 MiB (one line
// tail keeps whole) under a 32Mi limit: the kernel kills it, and the
// container ends OOMKilled.
func TestOOMKilledAtTheMemoryLimit(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "hog", "head -c 512M /dev/zero | tail")
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
	n.create(t, pod)
	done := n.waitPod(t, ns, pod.Name, time.Minute, "the hog ends", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	term := done.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != reasonOOMKilled || term.ExitCode != 137 {
		t.Errorf("the hog ended %s, want OOMKilled with exit code 137 (the kernel's SIGKILL)", describeStatus(done))
	}
}

// TestPidsLimitRefusesForks runs, on a node whose pids limit is 40, a shell
// that starts 100 processes: the kernel refuses the forks past the limit
// and the shell says so. The node's own groups go when it stops.
func TestPidsLimitRefusesForks(t *testing.T) {
	t.Parallel()
	cfg := cluster(t)
	var parent *cgroupParent
	t.Cleanup(func() { // runs after the node stopped
		if parent != nil {
			awaitRemoved(t, parentDirs(parent))
		}
	})
	n := startNode(t, cfg, "pids-node", false, func(c *Config) { c.PodPidsLimit = 40 })
	parent = n.provider.deps.cgroups
	ns := n.namespace(t)
	pod := n.shellPod(ns, "forker", `i=0; while [ $i -lt 100 ]; do sleep 600 & i=$((i+1)); done; echo all 100 started`)
	n.create(t, pod)
	done := n.waitPod(t, ns, pod.Name, time.Minute, "the forker ends", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
	})
	log := n.logs(t, ns, pod.Name, "main", "")
	if done.Status.Phase != corev1.PodFailed || !strings.Contains(log, "Cannot fork") || strings.Contains(log, "all 100 started") {
		t.Errorf("the forker ended %s, log %q; want it refused a fork (\"Cannot fork\")", describeStatus(done), log)
	}
}

// cgroupOf reads a /proc cgroup file: the directories of the memory, cpu and
// pids groups in cgroup v1, of the unified group ("") in v2.
func cgroupOf(t *testing.T, file string, parent *cgroupParent) map[string]string {
	t.Helper()
	dirs, err := readCgroupOf(file, parent)
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// readCgroupOf is cgroupOf for a file that may go while it is read.
func readCgroupOf(file string, parent *cgroupParent) (map[string]string, error) {
	v1, unified, err := cgroups.ParseCgroupFileUnified(file)
	if err != nil {
		return nil, err
	}
	if parent.v2 != nil {
		return map[string]string{"": filepath.Join(cgroupsRoot, unified)}, nil
	}
	dirs := map[string]string{}
	for _, c := range v1Controllers {
		dirs[c] = filepath.Join(cgroupsRoot, c, v1[c])
	}
	return dirs, nil
}

// parentDirs are the directories of the node's parent groups.
func parentDirs(p *cgroupParent) map[string]string {
	if p.v2 != nil {
		return map[string]string{"": p.v2Dir}
	}
	dirs := map[string]string{}
	for _, c := range v1Controllers {
		rel, _ := p.v1Path(p.v1Leaf)(cgroup1.Name(c))
		dirs[c] = filepath.Join(cgroupsRoot, c, rel)
	}
	return dirs
}

// awaitRemoved waits for the groups' directories to go.
func awaitRemoved(t *testing.T, dirs map[string]string) {
	t.Helper()
	var left []string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		left = nil
		for _, d := range dirs {
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				left = append(left, d)
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("groups left: %v", left)
	}
}

func equal(a, b map[string]string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// parentPID is a process's parent, from /proc/PID/stat (after the command's
// parenthesized name: state, then the parent's pid).
func parentPID(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	ppid, err := strconv.Atoi(fields[1])
	if err != nil || ppid <= 1 {
		t.Fatalf("process %d: parent %q, not a descendant of the node", pid, fields[1])
	}
	return ppid
}

func commandOf(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimSpace(string(data)), "\x00", " ")
}
