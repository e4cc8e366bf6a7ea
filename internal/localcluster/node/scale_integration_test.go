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

// TestManyPodsIdleCheaply runs 100 pods at once: they start within seconds,
// each with its own IP, the node stays nearly idle while they run (it is
// event driven), and deleting them all leaves no process behind. It is not
// parallel: it measures the CPU the test process, node included, uses.
func TestManyPodsIdleCheaply(t *testing.T) {
	const pods = 100
	n := sharedNode(t)
	ns := n.namespace(t)
	ctx := context.Background()
	marker := strconv.Itoa(700000 + int(time.Now().UnixNano()%99999))
	start := time.Now()
	for i := range pods {
		pod := n.shellPod(ns, fmt.Sprintf("p%d", i), "exec sleep "+marker)
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		pod.Spec.Subdomain = "many"
		n.create(t, pod)
	}
	ips := map[string]bool{}
	for i := range pods {
		pod := n.waitPhase(t, ns, fmt.Sprintf("p%d", i), corev1.PodRunning)
		ips[pod.Status.PodIP] = true
	}
	t.Logf("%d pods running %s after the first was created", pods, time.Since(start).Round(time.Millisecond))
	if len(ips) != pods {
		t.Errorf("%d distinct pod IPs for %d pods", len(ips), pods)
	}

	before := processCPU(t)
	time.Sleep(2 * time.Second)
	used := processCPU(t) - before
	t.Logf("node (and test) CPU while %d pods idle: %s over 2s", pods, used)
	if used > 200*time.Millisecond {
		t.Errorf("the node used %s of CPU in 2s with idle pods, want it nearly idle", used)
	}

	start = time.Now()
	if err := n.client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForProcesses(t, marker, 0)
	for i := range pods {
		waitGone(t, n, ns, fmt.Sprintf("p%d", i), 20*time.Second)
	}
	t.Logf("%d pods stopped and deleted in %s", pods, time.Since(start).Round(time.Millisecond))
}

// processCPU is the CPU time this process used so far.
func processCPU(t *testing.T) time.Duration {
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
