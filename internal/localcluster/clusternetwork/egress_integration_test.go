//go:build integration

package clusternetwork

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// hostAccessFixture is the cluster network component (Run) with one node
// attached, a real node network (podnetwork) with one pod and a Service
// listener, and four loopback servers of the host: two forwarded to the
// host IP at their own ports, one the node's kubelet API.
type hostAccessFixture struct {
	node   *podnetwork.NodeNetwork
	pod    *podnetwork.Pod
	host   map[string]net.Listener // by name: api, etcd (forwarded), private, kubelet
	egress string
}

var (
	testNodesCIDR   = netip.MustParsePrefix("172.18.0.0/16")
	testHostIP      = netip.MustParseAddr("172.18.0.1")
	testPodCIDR     = netip.MustParsePrefix("10.244.0.0/16")
	testNodePods    = netip.MustParsePrefix("10.244.0.0/20")
	testServiceCIDR = netip.MustParsePrefix("10.96.0.0/16")
	testNodeIP      = netip.MustParseAddr("172.18.0.2")
)

func newHostAccessFixture(t *testing.T) *hostAccessFixture {
	t.Helper()
	dir := shortTempDir(t)
	f := &hostAccessFixture{host: map[string]net.Listener{}, egress: dir + "/egress.sock"}
	for _, name := range []string{"api", "etcd", "private", "kubelet"} {
		f.host[name] = testutil.ListenEcho(t, "127.0.0.1:0", name)
	}
	cfg := Config{
		NodesCIDR: testNodesCIDR, PodCIDR: testPodCIDR, ServiceCIDRs: []netip.Prefix{testServiceCIDR},
		Nodes: []Node{{IP: testNodeIP, PodCIDR: testNodePods, KubeletPort: f.port("kubelet")}},
		Forwards: []Forward{
			{Port: f.port("api"), Target: f.host["api"].Addr().String()},
			{Port: f.port("etcd"), Target: f.host["etcd"].Addr().String()},
		},
		Socket: dir + "/network.sock", EgressSocket: f.egress, Log: logr.Discard(),
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("the cluster network: %v", err)
		}
	})

	node, err := podnetwork.NewNodeNetwork(podnetwork.NodeConfig{PodCIDR: testNodePods, ClusterPodCIDR: testPodCIDR,
		NodeIP: testNodeIP, NodesCIDR: testNodesCIDR, ServiceCIDRs: []netip.Prefix{testServiceCIDR}})
	if err != nil {
		t.Fatalf("creating the node network (the test needs root or a user namespace's root): %v", err)
	}
	t.Cleanup(func() { node.Close() })
	f.node = node
	attached := make(chan struct{})
	go func() {
		defer close(attached)
		podnetwork.AttachNode(ctx, cfg.Socket, testNodeIP, node.Uplink(), logr.Discard())
	}()
	t.Cleanup(func() { cancel(); <-attached })
	if f.pod, err = node.AddPod(netip.MustParseAddr("10.244.0.100")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.pod.Close() })
	// A pod's server, and a Service's listener (as the service proxy's) in
	// the node's services namespace.
	podLn, err := f.pod.Namespace().Listen("tcp", "10.244.0.100:8080")
	if err != nil {
		t.Fatal(err)
	}
	testutil.ServeEcho(t, podLn, "pod")
	svcLn, err := node.ServicesNamespace().Listen("tcp", "10.96.0.10:80")
	if err != nil {
		t.Fatal(err)
	}
	testutil.ServeEcho(t, svcLn, "service")
	// Attached once the pod reaches a forward through the cluster network.
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got, _ := testutil.ExchangeWith(f.pod.Namespace().DialContext, onHost(f.port("api")), "up?")
		return got == "api: up?", nil
	})
	if err != nil {
		t.Fatalf("the pod never reached the API server's forward through the cluster network: %v", err)
	}
	return f
}

// port is the host port of the named server, and of its forward.
func (f *hostAccessFixture) port(name string) int { return f.host[name].Addr().(*net.TCPAddr).Port }

// onHost is the host IP's address at port.
func onHost(port int) string { return net.JoinHostPort(testHostIP.String(), strconv.Itoa(port)) }

// onNode is the node IP's address at port.
func onNode(port int) string { return net.JoinHostPort(testNodeIP.String(), strconv.Itoa(port)) }

// TestPodReachesHostOnlyThroughForwards: a pod reaches exactly the
// forwarded servers, at the host IP, and nothing else of the host.
func TestPodReachesHostOnlyThroughForwards(t *testing.T) {
	f := newHostAccessFixture(t)
	for _, name := range []string{"api", "etcd"} {
		got, err := testutil.ExchangeWith(f.pod.Namespace().DialContext, onHost(f.port(name)), "hello")
		if want := name + ": hello"; err != nil || got != want {
			t.Errorf("pod -> %s: %q, %v; want %q", onHost(f.port(name)), got, err, want)
		}
	}
	for _, addr := range []string{
		onHost(f.port("private")),         // not forwarded
		onHost(f.port("kubelet")),         // the kubelet API: the egress's only
		onNode(f.port("api")),             // the node IP: forwards are the host's
		f.host["private"].Addr().String(), // the host's loopback: the pod's own
		f.host["api"].Addr().String(),     // a forwarded server, at its own address
		// The node namespace's bridge address.
		net.JoinHostPort(podnetwork.Gateway(testNodePods).String(), strconv.Itoa(f.port("api"))),
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
	socket := f.egress
	for target, want := range map[string]string{
		"10.244.0.100:8080": "pod: ping",
		// Routed to the node, whose Service proxy listens there.
		"10.96.0.10:80": "service: ping",
		// The kubelet API, on the host's loopback.
		onNode(f.port("kubelet")): "kubelet: ping",
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
		onHost(f.port("api")):                          {http.StatusForbidden, "outside the cluster network"},
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
