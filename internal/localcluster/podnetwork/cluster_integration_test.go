//go:build integration

package podnetwork

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The test cluster: two nodes, each with a /20 of 10.244.0.0/16.
var (
	testNodesCIDR      = netip.MustParsePrefix("172.18.0.0/16")
	testClusterPodCIDR = netip.MustParsePrefix("10.244.0.0/16")
	testServiceCIDR    = netip.MustParsePrefix("10.96.0.0/16")
	testNodes          = []ClusterNode{
		{IP: netip.MustParseAddr("172.18.0.2"), PodCIDR: netip.MustParsePrefix("10.244.0.0/20")},
		{IP: netip.MustParseAddr("172.18.0.3"), PodCIDR: netip.MustParsePrefix("10.244.16.0/20")},
	}
)

// startClusterNetwork serves a cluster network of testNodes on socket
// until the test ends or stop is called.
func startClusterNetwork(t testing.TB, socket string) (c *ClusterNetwork, stop func()) {
	t.Helper()
	c, err := NewClusterNetwork(ClusterConfig{NodesCIDR: testNodesCIDR, ServiceCIDRs: []netip.Prefix{testServiceCIDR}, Nodes: testNodes})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- c.Serve(ln) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		ln.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("closing the cluster network: %v", err)
		}
	}
	t.Cleanup(stop)
	return c, stop
}

// startNode creates node i's network and keeps it attached through socket
// until the test ends or stop is called.
func startNode(t testing.TB, i int, socket string) (n *NodeNetwork, stop func()) {
	t.Helper()
	n, err := NewNodeNetwork(NodeConfig{
		PodCIDR:        testNodes[i].PodCIDR,
		ClusterPodCIDR: testClusterPodCIDR,
		NodeIP:         testNodes[i].IP,
		NodesCIDR:      testNodesCIDR,
		ServiceCIDRs:   []netip.Prefix{testServiceCIDR},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var log logr.Logger = logr.Discard()
	if tt, ok := t.(*testing.T); ok {
		log = testr.New(tt)
	}
	go func() {
		defer close(done)
		AttachNode(ctx, socket, testNodes[i].IP, n.Uplink(), log)
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		n.Close()
	}
	t.Cleanup(stop)
	return n, stop
}

// awaitAttached polls until the cluster network has exactly want attached.
func awaitAttached(t testing.TB, c *ClusterNetwork, want ...netip.Addr) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Equal(c.Attached(), want), nil
	})
	if err != nil {
		t.Fatalf("attached nodes: %v after 10s, want %v", c.Attached(), want)
	}
}

// serveEchoIn serves testutil's echo, named name, at addr in ns.
func serveEchoIn(t *testing.T, ns *Namespace, addr, name string) {
	t.Helper()
	l, err := ns.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s listening on %s: %v", name, addr, err)
	}
	testutil.ServeEcho(t, l, name)
}

// expectEcho exchanges a message with addr from ns and checks name answered.
func expectEcho(t *testing.T, from string, ns *Namespace, addr, name string) {
	t.Helper()
	got, err := testutil.ExchangeWith(ns.DialContext, addr, "hello from "+from)
	if want := name + ": hello from " + from; err != nil || got != want {
		t.Errorf("%s dialing %s: got %q, %v; want %q", from, addr, got, err, want)
	}
}

// TestClusterNetworkRoutesBetweenNodes: pods on two nodes reach each other
// and the other node both ways; the cluster network reaches the pods, the
// nodes and a Service (served by the first node); a pod reaches the
// cluster network's HostIP; an address outside the cluster is unreachable
// at once.
func TestClusterNetworkRoutesBetweenNodes(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "cluster.sock")
	c, _ := startClusterNetwork(t, socket)
	node1, _ := startNode(t, 0, socket)
	node2, _ := startNode(t, 1, socket)
	awaitAttached(t, c, testNodes[0].IP, testNodes[1].IP)
	pod1 := testPod(t, node1, "10.244.0.10")
	pod2 := testPod(t, node2, "10.244.16.10")
	serveEchoIn(t, pod1.Namespace(), "10.244.0.10:8080", "pod1")
	serveEchoIn(t, pod2.Namespace(), "10.244.16.10:8080", "pod2")
	serveEchoIn(t, node1.Namespace(), "172.18.0.2:10250", "node1")
	serveEchoIn(t, node2.Namespace(), "172.18.0.3:10250", "node2")
	serveEchoIn(t, node1.ServicesNamespace(), "10.96.0.5:80", "service on node1")
	serveEchoIn(t, c.Namespace(), "172.18.0.1:6443", "host")

	expectEcho(t, "pod1", pod1.Namespace(), "10.244.16.10:8080", "pod2")
	expectEcho(t, "pod2", pod2.Namespace(), "10.244.0.10:8080", "pod1")
	expectEcho(t, "pod1", pod1.Namespace(), "172.18.0.3:10250", "node2")
	expectEcho(t, "pod2", pod2.Namespace(), "172.18.0.2:10250", "node1")
	expectEcho(t, "node1", node1.Namespace(), "172.18.0.3:10250", "node2")
	for _, to := range []struct{ addr, name string }{
		{"10.244.0.10:8080", "pod1"}, {"10.244.16.10:8080", "pod2"},
		{"172.18.0.2:10250", "node1"}, {"172.18.0.3:10250", "node2"},
		{"10.96.0.5:80", "service on node1"},
	} {
		expectEcho(t, "the cluster network", c.Namespace(), to.addr, to.name)
	}
	expectEcho(t, "pod1", pod1.Namespace(), "172.18.0.1:6443", "host")
	expectEcho(t, "pod2", pod2.Namespace(), "172.18.0.1:6443", "host")

	// No route leads anywhere else: TEST-NET-1 is unreachable at the node,
	// and no packet reaches the router.
	for name, ns := range map[string]*Namespace{"pod1": pod1.Namespace(), "node1": node1.Namespace(), "the cluster network": c.Namespace()} {
		if _, err := testutil.ExchangeWith(ns.DialContext, "192.0.2.1:80", "x"); !errors.Is(err, syscall.ENETUNREACH) {
			t.Errorf("%s dialing 192.0.2.1:80: %v, want network unreachable", name, err)
		}
	}
}

// TestClusterNetworkReattachment: a node closed and started again for the
// same IP is routed to again, and the cluster network keeps nothing of the
// old one (no copy of its packet socket, which would hold its namespace);
// a cluster network
// restarted on the same socket is attached to again by AttachNode alone.
func TestClusterNetworkReattachment(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "cluster.sock")
	c, stopCluster := startClusterNetwork(t, socket)
	node1, _ := startNode(t, 0, socket)
	node2, stopNode2 := startNode(t, 1, socket)
	awaitAttached(t, c, testNodes[0].IP, testNodes[1].IP)
	pod1 := testPod(t, node1, "10.244.0.10")
	serveEchoIn(t, pod1.Namespace(), "10.244.0.10:8080", "pod1")

	witness := witnessNamespace(t, node2.Namespace())
	stopNode2()
	awaitAttached(t, c, testNodes[0].IP)
	awaitNamespaceGone(t, witness)

	node2, _ = startNode(t, 1, socket)
	awaitAttached(t, c, testNodes[0].IP, testNodes[1].IP)
	pod2 := testPod(t, node2, "10.244.16.10")
	serveEchoIn(t, pod2.Namespace(), "10.244.16.10:8080", "new pod2")
	expectEcho(t, "pod1", pod1.Namespace(), "10.244.16.10:8080", "new pod2")
	expectEcho(t, "new pod2", pod2.Namespace(), "10.244.0.10:8080", "pod1")

	stopCluster()
	c, _ = startClusterNetwork(t, socket)
	awaitAttached(t, c, testNodes[0].IP, testNodes[1].IP)
	serveEchoIn(t, c.Namespace(), "172.18.0.1:6443", "new host")
	expectEcho(t, "pod1", pod1.Namespace(), "10.244.16.10:8080", "new pod2")
	expectEcho(t, "new pod2", pod2.Namespace(), "172.18.0.1:6443", "new host")
	expectEcho(t, "the new cluster network", c.Namespace(), "10.244.0.10:8080", "pod1")
}

// TestClusterNetworkRefusesStrangers: an unknown node IP, or a hello
// carrying anything but a packet socket bound to a link, is refused with
// the reason.
func TestClusterNetworkRefusesStrangers(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "cluster.sock")
	startClusterNetwork(t, socket)
	n, _ := startNode(t, 0, socket)
	_, err := attachOnce(context.Background(), socket, netip.MustParseAddr("172.18.0.9"), n.Uplink())
	if err == nil || !strings.Contains(err.Error(), "172.18.0.9 is not one of the cluster's nodes") {
		t.Errorf("attaching an unknown node IP: %v, want a refusal naming it", err)
	}
	notSocket, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer notSocket.Close()
	expectRefused(t, socket, notSocket, "/dev/null", "not a socket")
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	tcpFile, err := tcp.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer tcpFile.Close()
	expectRefused(t, socket, tcpFile, "a TCP socket", "want an AF_PACKET (17) SOCK_RAW (3) socket")
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unbound := os.NewFile(uintptr(fd), "unbound packet socket")
	defer unbound.Close()
	expectRefused(t, socket, unbound, "an unbound packet socket", "bound to no link")
}

// expectRefused attaches what as node 2's uplink and expects a refusal
// saying why.
func expectRefused(t *testing.T, socket string, uplink *os.File, what, why string) {
	t.Helper()
	_, err := attachOnce(context.Background(), socket, testNodes[1].IP, uplink)
	if err == nil || !strings.Contains(err.Error(), "no uplink: ") || !strings.Contains(err.Error(), why) {
		t.Errorf("attaching %s as an uplink: %v, want a refusal saying %q", what, err, why)
	}
}

// witnessNamespace links a veth end in a namespace of the test's own to
// ns: the pair goes when ns does, which is when nothing (no process, no
// descriptor of it, no socket made in it) holds ns any more.
func witnessNamespace(t *testing.T, ns *Namespace) *Namespace {
	t.Helper()
	w, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	h, err := ns.netlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "witness"}, PeerName: "witness", PeerNamespace: netlink.NsFd(int(w.Fd()))}
	if err := h.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	return w
}

// awaitNamespaceGone polls until witness's end of the pair made by
// witnessNamespace is gone, with the namespace it linked to.
func awaitNamespaceGone(t *testing.T, witness *Namespace) {
	t.Helper()
	h, err := witness.netlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := h.LinkByName("witness")
		return err != nil, nil
	})
	if err != nil {
		t.Fatal("the closed node's namespace is still there after 10s: someone holds it (a copy of its packet socket?)")
	}
}
