//go:build integration

package node

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const manyPods = 100

// TestManyPods runs 100 pods at once: each gets an IP of its own, and
// deleting them all leaves no process behind. It is not parallel: it loads
// the node. (BenchmarkManyPods measures how fast they start and how little
// CPU the node uses while they idle.)
func TestManyPods(t *testing.T) {
	n := sharedNode(t)
	ns := n.namespace(t)
	marker := startManyPods(t, n, ns)
	ips := map[string]bool{}
	for i := range manyPods {
		pod, err := n.client.CoreV1().Pods(ns).Get(context.Background(), fmt.Sprintf("p%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ips[pod.Status.PodIP] = true
	}
	if len(ips) != manyPods {
		t.Errorf("%d distinct pod IPs for %d pods", len(ips), manyPods)
	}
	deleteManyPods(t, n, ns, marker)
}

// How long 100 pods take to start and to be deleted, and the CPU the node
// (with the test process it runs in) uses while they idle — it is event
// driven, so nearly none:
//
//	go test -tags integration ./internal/localcluster/node -run '^$' -bench ManyPods -benchtime 1x
//
// (part of make bench; results in docs/benchmarks.md).
func BenchmarkManyPods(b *testing.B) {
	n := sharedNode(b)
	for b.Loop() {
		ns := n.namespace(b)
		start := time.Now()
		marker := startManyPods(b, n, ns)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-running")

		const window = 2 * time.Second
		before := processCPU(b)
		time.Sleep(window) // the measurement's window, while the pods idle
		used := processCPU(b) - before
		b.ReportMetric(float64(used.Milliseconds())/window.Seconds(), "cpu-ms/s-idle")

		start = time.Now()
		deleteManyPods(b, n, ns, marker)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-deleted")
	}
}

// startManyPods creates manyPods pods that sleep, and waits until they all
// run. It returns the marker their command lines carry.
func startManyPods(t testing.TB, n *testNode, ns string) string {
	t.Helper()
	marker := strconv.Itoa(700000 + int(time.Now().UnixNano()%99999))
	for i := range manyPods {
		pod := n.shellPod(ns, fmt.Sprintf("p%d", i), "exec sleep "+marker)
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		pod.Spec.Subdomain = "many"
		n.create(t, pod)
	}
	for i := range manyPods {
		n.waitPhase(t, ns, fmt.Sprintf("p%d", i), corev1.PodRunning)
	}
	return marker
}

// deleteManyPods deletes the pods of ns and waits until their processes and
// the pods are gone.
func deleteManyPods(t testing.TB, n *testNode, ns, marker string) {
	t.Helper()
	if err := n.client.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForProcesses(t, marker, 0)
	for i := range manyPods {
		waitGone(t, n, ns, fmt.Sprintf("p%d", i), 20*time.Second)
	}
}

// processCPU is the CPU time this process used so far.
func processCPU(t testing.TB) time.Duration {
	t.Helper()
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th, in clock ticks (100 per second on Linux).
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
