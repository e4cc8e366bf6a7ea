//go:build integration

package node

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// What a pod may take of the node, on the host's real cgroups and disk: the
// group holding all of the node's containers is capped at the node's, a
// container's memory limit above the node's allocatable is lowered to it,
// and a pod writing past its emptyDir's sizeLimit is evicted.

// TestMemoryLimitAboveTheNodeIsCapped runs a container asking 100Gi: its
// group's memory limit is the node's cap (at most the host's memory), the
// node's own group has that cap and its pids cap, and an event says so.
func TestMemoryLimitAboveTheNodeIsCapped(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	marker := strconv.Itoa(700000 + int(time.Now().UnixNano()%99999))
	pod := n.shellPod(ns, "greedy", "exec sleep "+marker)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Gi")}
	n.create(t, pod)
	n.waitPhase(t, ns, pod.Name, corev1.PodRunning)
	waitForProcesses(t, marker, 1)
	parent := n.provider.deps.cgroups
	if parent.unusable != "" {
		t.Fatalf("the node cannot make cgroups here: %s", parent.unusable)
	}
	node := n.provider.deps.sandbox.node
	host, err := memTotal()
	if err != nil {
		t.Fatal(err)
	}
	if node.MemoryBytes <= 0 || node.MemoryBytes > host || node.Pids <= 0 {
		t.Fatalf("the node's caps %+v: want memory at most the host's %d and a pids cap", node, host)
	}
	memFile, pidsFile, memKey, pidsKey := "memory.limit_in_bytes", "pids.max", "memory", "pids"
	if parent.v2 != nil {
		memFile, memKey, pidsKey = "memory.max", "", ""
	}
	groups := cgroupOf(t, "/proc/"+strconv.Itoa(processesWith(marker)[0])+"/cgroup", parent)
	want := strconv.FormatInt(node.MemoryBytes, 10)
	if got := readTrimmed(t, filepath.Join(groups[memKey], memFile)); got != want {
		t.Errorf("the container's %s is %s, want the node's cap %s", memFile, got, want)
	}
	parents := parentDirs(parent)
	if got := readTrimmed(t, filepath.Join(parents[memKey], memFile)); got != want {
		t.Errorf("the node's group's %s is %s, want %s", memFile, got, want)
	}
	if got := readTrimmed(t, filepath.Join(parents[pidsKey], pidsFile)); got != strconv.FormatInt(node.Pids, 10) {
		t.Errorf("the node's group's %s is %s, want %d", pidsFile, got, node.Pids)
	}
	var message string
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := n.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name + ",reason=" + reasonMemoryLimitCapped})
		if err != nil || len(evs.Items) == 0 {
			return false, nil
		}
		message = evs.Items[0].Message
		return true, nil
	}); err != nil {
		t.Fatalf("no %s event for the pod", reasonMemoryLimitCapped)
	}
	if !strings.Contains(message, "limits.memory 100Gi is above the node's allocatable memory (at most the host's)") {
		t.Errorf("the event says %q", message)
	}
}

// TestEmptyDirPastItsSizeLimitIsEvicted: a pod writing 8 MiB into an
// emptyDir of sizeLimit 1Mi, then sleeping, is evicted as a kubelet evicts
// it; a pod within its limit keeps running.
func TestEmptyDirPastItsSizeLimitIsEvicted(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	withScratch := func(name, script string) *corev1.Pod {
		limit := resource.MustParse("1Mi")
		pod := n.shellPod(ns, name, script)
		pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		return pod
	}
	n.create(t, withScratch("within", "head -c 100000 /dev/zero > /scratch/small && exec sleep 600"))
	n.waitPhase(t, ns, "within", corev1.PodRunning)
	n.create(t, withScratch("filler", "head -c 8388608 /dev/zero > /scratch/fill && exec sleep 600"))
	done := n.waitPod(t, ns, "filler", 2*evictionInterval+30*time.Second, "eviction", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `; done.Status.Reason != reasonEvicted || done.Status.Message != want {
		t.Errorf("the filler ended %s %q, want Evicted %q", describeStatus(done), done.Status.Message, want)
	}
	if p, err := n.client.CoreV1().Pods(ns).Get(context.Background(), "within", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("the pod within its limit: %s, %v; want it running", describeStatus(p), err)
	}
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
