//go:build integration

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodReachableAtItsIP runs a server listening on its pod's own IP and a
// client pod dialing that IP.
func TestPodReachableAtItsIP(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	server := n.shellPod(ns, "server", "")
	server.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	server.Spec.Containers = []corev1.Container{helperContainer(t, "main", "serve", "$(POD_IP):8080")}
	server.Spec.Containers[0].Env = append(server.Spec.Containers[0].Env, podIPEnvVar)
	n.create(t, server)
	running := n.waitPhase(t, ns, "server", corev1.PodRunning)

	client := n.shellPod(ns, "client", "")
	client.Spec.Containers = []corev1.Container{helperContainer(t, "main", "dial", running.Status.PodIP+":8080")}
	n.create(t, client)
	n.waitPhase(t, ns, "client", corev1.PodSucceeded)
	if got := n.logs(t, ns, "client", "main", ""); got != "got: hello from server\n" {
		t.Errorf("client got %q", got)
	}
	if got := n.logs(t, ns, "server", "main", ""); got != fmt.Sprintf("listening on %s:8080\n", running.Status.PodIP) {
		t.Errorf("server said %q", got)
	}
	if err := n.client.CoreV1().Pods(ns).Delete(context.Background(), "server", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, n, ns, "server", 10*time.Second)
}
