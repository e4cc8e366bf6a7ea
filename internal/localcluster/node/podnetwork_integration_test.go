//go:build integration

package node

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestPodsHaveNetworksOfTheirOwn: two pods listen on the same port, each on
// a distinct IP of the pod CIDR; a third pod reaches both by IP, and the
// node (its probes' namespace) too; no pod reaches a listener on the host's
// loopback, nor binds another pod's IP; a hostNetwork pod binds the node IP.
func TestPodsHaveNetworksOfTheirOwn(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	cidr := netip.MustParsePrefix(DefaultPodCIDR)

	servers := []string{"server-a", "server-b"}
	ips := map[string]string{}
	for _, name := range servers {
		pod := n.shellPod(ns, name, "")
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
		pod.Spec.Containers = []corev1.Container{helperContainer(t, "main", "serve", ":8080")}
		n.create(t, pod)
	}
	for _, name := range servers {
		ip := n.waitPhase(t, ns, name, corev1.PodRunning).Status.PodIP
		if a, err := netip.ParseAddr(ip); err != nil || !cidr.Contains(a) || a.IsLoopback() {
			t.Fatalf("%s has IP %q, want one of %s", name, ip, DefaultPodCIDR)
		}
		ips[name] = ip
	}
	if ips["server-a"] == ips["server-b"] {
		t.Fatalf("both servers have IP %s", ips["server-a"])
	}

	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	client := n.shellPod(ns, "client", "")
	client.Spec.InitContainers = []corev1.Container{
		helperContainer(t, "dial-a", "dial", ips["server-a"]+":8080"),
		helperContainer(t, "dial-b", "dial", ips["server-b"]+":8080"),
		helperContainer(t, "host-loopback", "connect", host.Addr().String()),
		helperContainer(t, "bind-other", "bind", ips["server-a"]+":9090"),
	}
	client.Spec.Containers = []corev1.Container{helperContainer(t, "main", "bind", ":8080")}
	n.create(t, client)
	n.waitPhase(t, ns, "client", corev1.PodSucceeded)
	for c, server := range map[string]string{"dial-a": "server-a", "dial-b": "server-b"} {
		if got, want := n.logs(t, ns, "client", c, ""), fmt.Sprintf("got: hello from %s\n", server); got != want {
			t.Errorf("%s: %q, want %q", c, got, want)
		}
	}
	if got := n.logs(t, ns, "client", "host-loopback", ""); !strings.Contains(got, "connection refused") {
		t.Errorf("a pod dialing the host's loopback listener %s: %q, want connection refused", host.Addr(), got)
	}
	if got := n.logs(t, ns, "client", "bind-other", ""); !strings.Contains(got, "cannot assign requested address") {
		t.Errorf("a pod binding another pod's IP %s: %q, want cannot assign requested address", ips["server-a"], got)
	}
	if got := n.logs(t, ns, "client", "main", ""); got != "bound\n" {
		t.Errorf("the client binding :8080, the servers' port: %q, want bound", got)
	}

	// The node dials pods from its namespace, as its probes do.
	for _, name := range servers {
		c, err := n.NetworkNamespace().DialContext(t.Context(), "tcp", ips[name]+":8080")
		if err != nil {
			t.Errorf("the node dialing %s at %s: %v", name, ips[name], err)
			continue
		}
		c.Close()
	}

	checkHostNetworkPodBindsNodeIP(t, n, ns)
}

// checkHostNetworkPodBindsNodeIP runs a hostNetwork pod: it has the node IP,
// and binds it (it runs in the node's namespace).
func checkHostNetworkPodBindsNodeIP(t *testing.T, n *testNode, ns string) {
	t.Helper()
	hostNet := n.shellPod(ns, "hostnet", "")
	hostNet.Spec.HostNetwork = true
	hostNet.Spec.Containers = []corev1.Container{helperContainer(t, "main", "bind", DefaultNodeIP+":0")}
	n.create(t, hostNet)
	got := n.waitPhase(t, ns, "hostnet", corev1.PodSucceeded)
	if got.Status.PodIP != DefaultNodeIP {
		t.Errorf("the hostNetwork pod's IP is %s, want the node IP %s", got.Status.PodIP, DefaultNodeIP)
	}
	if log := n.logs(t, ns, "hostnet", "main", ""); log != "bound\n" {
		t.Errorf("the hostNetwork pod binding the node IP: %q, want bound", log)
	}
}
