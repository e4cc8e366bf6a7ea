//go:build integration

package node

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/go-logr/logr"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// hostAccessFixture is a real node network (podnetwork) with one pod and a
// Service listener, and three loopback servers of the host, two of them
// forwarded to the node IP at their own ports.
type hostAccessFixture struct {
	network *podnetwork.NodeNetwork
	pod     *podnetwork.Pod
	host    map[string]net.Listener // by name: api, etcd (forwarded), private
}

var (
	testPodCIDR     = netip.MustParsePrefix("10.244.0.0/16")
	testServiceCIDR = netip.MustParsePrefix("10.96.0.0/16")
	testNodeIP      = netip.MustParseAddr("172.18.0.2")
)

func newHostAccessFixture(t *testing.T) *hostAccessFixture {
	t.Helper()
	network, err := podnetwork.NewNodeNetwork(podnetwork.NodeConfig{PodCIDR: testPodCIDR, NodeIP: testNodeIP, NodesCIDR: netip.MustParsePrefix("172.18.0.0/16"), ServiceCIDRs: []netip.Prefix{testServiceCIDR}})
	if err != nil {
		t.Fatalf("creating the node network (the test needs root or a user namespace's root): %v", err)
	}
	t.Cleanup(func() { network.Close() })
	pod, err := network.AddPod(netip.MustParseAddr("10.244.0.100"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pod.Close() })
	f := &hostAccessFixture{network: network, pod: pod, host: map[string]net.Listener{}}
	for _, name := range []string{"api", "etcd", "private"} {
		f.host[name] = testutil.ListenEcho(t, "127.0.0.1:0", name)
	}
	fw, err := startForwarders(logr.Discard(), network.Namespace(), testNodeIP.String(), []Forward{
		{Port: f.port("api"), Target: f.host["api"].Addr().String()},
		{Port: f.port("etcd"), Target: f.host["etcd"].Addr().String()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fw.stop)
	// A pod's server, and a Service's listener (as the service proxy's) in
	// the node's namespace.
	podLn, err := pod.Namespace().Listen("tcp", "10.244.0.100:8080")
	if err != nil {
		t.Fatal(err)
	}
	testutil.ServeEcho(t, podLn, "pod")
	svcLn, err := network.Namespace().Listen("tcp", "10.96.0.10:80")
	if err != nil {
		t.Fatal(err)
	}
	testutil.ServeEcho(t, svcLn, "service")
	return f
}

// port is the host port of the named server, and of its forward.
func (f *hostAccessFixture) port(name string) int { return f.host[name].Addr().(*net.TCPAddr).Port }

// onNode is the node IP's address at port.
func onNode(port int) string { return net.JoinHostPort(testNodeIP.String(), strconv.Itoa(port)) }

// TestPodReachesHostOnlyThroughForwards: a pod reaches exactly the
// forwarded servers, at the node IP, and nothing else of the host.
func TestPodReachesHostOnlyThroughForwards(t *testing.T) {
	f := newHostAccessFixture(t)
	for _, name := range []string{"api", "etcd"} {
		got, err := testutil.ExchangeWith(f.pod.Namespace().DialContext, onNode(f.port(name)), "hello")
		if want := name + ": hello"; err != nil || got != want {
			t.Errorf("pod -> %s: %q, %v; want %q", onNode(f.port(name)), got, err, want)
		}
	}
	for _, addr := range []string{
		onNode(f.port("private")),         // not forwarded
		f.host["private"].Addr().String(), // the host's loopback: the pod's own
		f.host["api"].Addr().String(),     // a forwarded server, at its own address
		// The node namespace's bridge address: forwards listen on the
		// node IP only.
		net.JoinHostPort(podnetwork.Gateway(testPodCIDR).String(), strconv.Itoa(f.port("api"))),
	} {
		got, err := testutil.ExchangeWith(f.pod.Namespace().DialContext, addr, "hello")
		if err == nil {
			t.Errorf("pod -> %s: %q; want no connection", addr, got)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("pod -> %s: %v; want the connection refused", addr, err)
		}
	}
}

// TestEgressReachesOnlyTheClusterNetwork: through the egress socket, the
// API server's side reaches the pod, a cluster IP and the node, and nothing
// of the host.
func TestEgressReachesOnlyTheClusterNetwork(t *testing.T) {
	f := newHostAccessFixture(t)
	socket := shortTempDir(t) + "/egress.sock"
	e, err := startEgress(logr.Discard(), f.network.Namespace(), newEgressPolicy(testPodCIDR, []netip.Prefix{testServiceCIDR}, testNodeIP), nil, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer e.stop()
	for target, want := range map[string]string{
		"10.244.0.100:8080":    "pod: ping",
		"10.96.0.10:80":        "service: ping",
		onNode(f.port("etcd")): "etcd: ping", // the node's own forward
	} {
		res, c, br := connectThrough(t, socket, target)
		if res.StatusCode != http.StatusOK {
			t.Errorf("CONNECT %s: %s; want 200", target, res.Status)
			continue
		}
		io.WriteString(c, "ping")
		c.(*net.UnixConn).CloseWrite()
		got, err := io.ReadAll(br)
		if err != nil || string(got) != want {
			t.Errorf("through CONNECT %s: %q, %v; want %q", target, got, err, want)
		}
	}
	for target, want := range map[string]struct {
		code   int
		reason string
	}{
		f.host["private"].Addr().String():              {http.StatusForbidden, "outside the cluster network"},
		f.host["api"].Addr().String():                  {http.StatusForbidden, "outside the cluster network"},
		"localhost:" + strconv.Itoa(f.port("private")): {http.StatusForbidden, "is a name"},
		// Allowed, but nothing is there.
		"10.244.0.100:8081": {http.StatusBadGateway, "connection refused"},
		"10.96.0.10:81":     {http.StatusBadGateway, "connection refused"},
	} {
		res, _, _ := connectThrough(t, socket, target)
		if res.StatusCode != want.code || !strings.Contains(res.Status, want.reason) {
			t.Errorf("CONNECT %s: %q; want %d saying %q", target, res.Status, want.code, want.reason)
		}
	}
}
