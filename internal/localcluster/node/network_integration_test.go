//go:build integration

package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestSubdomainPeersResolveEachOther runs two pods of one subdomain (as the
// operator makes a job's pods): each resolves the other's <pod>.<job> name,
// with getent (glibc) and with Go's resolver, to the other's IP.
func TestSubdomainPeersResolveEachOther(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	names := []string{"job-worker-0", "job-worker-1"}
	// A pod that ends leaves its peers' hosts files, so both stay up until
	// both have resolved their peer.
	done := t.TempDir()
	for i, name := range names {
		peer := names[1-i] + ".job"
		pod := n.shellPod(ns, name, "until [ -e /ctl/done ]; do sleep 0.05; done")
		pod.Spec.Hostname = name
		pod.Spec.Subdomain = "job"
		pod.Spec.InitContainers = []corev1.Container{
			shellContainer("wait-peer", fmt.Sprintf("until getent hosts %s >/dev/null; do sleep 0.05; done", peer)),
			shellContainer("getent", fmt.Sprintf("getent hosts %s; getent hosts %s.%s.svc.cluster.local; hostname", peer, peer, ns)),
			helperContainer(t, "go-resolver", "resolve", peer),
		}
		pod.Spec.Volumes = []corev1.Volume{{Name: "ctl", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: done}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ctl", MountPath: "/ctl"}}
		n.create(t, pod)
	}
	ips := map[string]string{}
	for _, name := range names {
		pod := n.waitPhase(t, ns, name, corev1.PodRunning)
		ips[name] = pod.Status.PodIP
	}
	if err := writeFile(done+"/done", ""); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		n.waitPhase(t, ns, name, corev1.PodSucceeded)
	}
	if ips[names[0]] == ips[names[1]] {
		t.Fatalf("both pods have IP %s", ips[names[0]])
	}
	for i, name := range names {
		peer, peerIP := names[1-i], ips[names[1-i]]
		fqdn := fmt.Sprintf("%s.job.%s.svc.cluster.local", peer, ns)
		want := fmt.Sprintf("%s\t%s %s.job %s\n%s\t%s %s.job %s\n%s\n", peerIP, fqdn, peer, peer, peerIP, fqdn, peer, peer, name)
		if got := n.logs(t, ns, name, "getent", ""); normalizeSpaces(got) != normalizeSpaces(want) {
			t.Errorf("%s: getent said %q, want %q", name, got, want)
		}
		if got, want := n.logs(t, ns, name, "go-resolver", ""), fmt.Sprintf("%s.job [%s]\n", peer, peerIP); got != want {
			t.Errorf("%s: Go resolver said %q, want %q", name, got, want)
		}
	}
}

func normalizeSpaces(s string) string { return strings.Join(strings.Fields(s), " ") }

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
