//go:build integration

package node

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeRegistersReadyWithLease(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ctx := context.Background()
	node, err := n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready, ok := findNodeCondition(node, corev1.NodeReady)
	if !ok || ready.Status != corev1.ConditionTrue {
		t.Fatalf("Ready condition = %+v", ready)
	}
	if got := node.Status.Capacity.Pods().Value(); got != DefaultMaxPods {
		t.Errorf("pods capacity = %d, want %d", got, DefaultMaxPods)
	}
	if node.Status.Capacity.Cpu().IsZero() || node.Status.Allocatable.Memory().IsZero() {
		t.Errorf("capacity %v allocatable %v, want the host's CPUs and memory", node.Status.Capacity, node.Status.Allocatable)
	}
	_, port, _ := net.SplitHostPort(n.KubeletAddress())
	if strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)) != port {
		t.Errorf("kubelet endpoint port = %d, want %s", node.Status.DaemonEndpoints.KubeletEndpoint.Port, port)
	}
	want := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: DefaultNodeIP}
	if len(node.Status.Addresses) == 0 || node.Status.Addresses[0] != want {
		t.Errorf("addresses = %v, want InternalIP %s first", node.Status.Addresses, DefaultNodeIP)
	}
	lease, err := n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != n.name || lease.Spec.RenewTime == nil {
		t.Fatalf("lease spec = %+v", lease.Spec)
	}

	// The lease is renewed (every 10s, a quarter of its 40s duration) before
	// it runs out, and the node stays Ready.
	first := lease.Spec.RenewTime.Time
	deadline := first.Add(40 * time.Second)
	for {
		lease, err = n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
		if err == nil && lease.Spec.RenewTime.After(first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease renewed at %s not renewed again within its 40s duration", first)
		}
		time.Sleep(200 * time.Millisecond)
	}
	node, err = n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ready, _ := findNodeCondition(node, corev1.NodeReady); ready.Status != corev1.ConditionTrue {
		t.Errorf("Ready condition after a lease renewal = %+v", ready)
	}
}

// TestStoppingNodeKillsEveryPod runs a node of its own, stops it while pods
// run (one ignoring SIGTERM, one with a background child) and checks that no
// process of theirs is left and that the pods are reported Failed.
func TestStoppingNodeKillsEveryPod(t *testing.T) {
	t.Parallel()
	cfg := cluster(t)
	n := startNode(t, cfg, "stopping-node", false)
	ns := n.namespace(t)
	marker := strconv.Itoa(800000 + int(time.Now().UnixNano()%99999))
	n.create(t, n.shellPod(ns, "stubborn", fmt.Sprintf("trap '' TERM; sleep %s", marker)))
	n.create(t, n.shellPod(ns, "parent", fmt.Sprintf("sleep %s.5 & sleep %s.7", marker, marker)))
	n.waitPhase(t, ns, "stubborn", corev1.PodRunning)
	n.waitPhase(t, ns, "parent", corev1.PodRunning)
	waitForProcesses(t, marker, 3)

	start := time.Now()
	n.stop()
	select {
	case err := <-n.stopped:
		if err != nil {
			t.Errorf("node stopped with %v", err)
		}
		n.stopped <- err // for the cleanup
	case <-time.After(15 * time.Second):
		t.Fatal("node still running 15s after it was stopped")
	}
	t.Logf("node stopped in %s", time.Since(start).Round(time.Millisecond))
	if left := processesWith(marker); len(left) > 0 {
		t.Fatalf("processes %v outlived the node", left)
	}
	for _, name := range []string{"stubborn", "parent"} {
		pod, err := n.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Status.Phase != corev1.PodFailed || pod.Status.Reason != reasonShutdown {
			t.Errorf("pod %s after the node stopped: %s", name, describeStatus(pod))
		}
	}
}
