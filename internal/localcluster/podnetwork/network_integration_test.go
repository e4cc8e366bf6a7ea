//go:build integration

package podnetwork

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func testNodeNetwork(t *testing.T) *NodeNetwork {
	t.Helper()
	n, err := NewNodeNetwork(NodeConfig{
		PodCIDR:      netip.MustParsePrefix("10.244.0.0/16"),
		NodeIP:       netip.MustParseAddr("172.18.0.2"),
		NodesCIDR:    netip.MustParsePrefix("172.18.0.0/16"),
		ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func testPod(t testing.TB, n *NodeNetwork, ip string) *Pod {
	t.Helper()
	p, err := n.AddPod(netip.MustParseAddr(ip))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// serveName answers every connection to l with name.
func serveName(l net.Listener, name string) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, name)
			c.Close()
		}
	}()
}

// ask dials addr from ns and returns what it answers.
func ask(ns *Namespace, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ns.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	return string(b), err
}

// TestPodsShareAPortOnTheirOwnIPs: two pods listen on the same port, each on
// its address; a third pod and the node reach both by IP; pods reach the
// node IP and any cluster IP the node listens on in its services namespace.
func TestPodsShareAPortOnTheirOwnIPs(t *testing.T) {
	n := testNodeNetwork(t)
	a := testPod(t, n, "10.244.0.100")
	b := testPod(t, n, "10.244.1.100")
	c := testPod(t, n, "10.244.0.101")
	for _, p := range []*Pod{a, b} {
		l, err := p.Namespace().Listen("tcp", ":8080")
		if err != nil {
			t.Fatalf("pod %s listening on :8080: %v", p.IP(), err)
		}
		t.Cleanup(func() { l.Close() })
		serveName(l, p.IP().String())
	}
	for _, from := range []*Namespace{c.Namespace(), n.Namespace()} {
		for _, to := range []*Pod{a, b} {
			got, err := ask(from, net.JoinHostPort(to.IP().String(), "8080"))
			if err != nil || got != to.IP().String() {
				t.Errorf("dialing %s:8080: got %q, %v; want %q", to.IP(), got, err, to.IP())
			}
		}
	}

	// The node's listeners, on its IP, and in the services namespace on
	// any cluster IP.
	for _, addr := range []string{"172.18.0.2:9000", "10.96.0.1:443", "10.96.3.7:80"} {
		ns := n.ServicesNamespace()
		if addr == "172.18.0.2:9000" {
			ns = n.Namespace()
		}
		l, err := ns.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("node listening on %s: %v", addr, err)
		}
		t.Cleanup(func() { l.Close() })
		serveName(l, "node "+addr)
		if got, err := ask(a.Namespace(), addr); err != nil || got != "node "+addr {
			t.Errorf("pod dialing the node's %s: got %q, %v", addr, got, err)
		}
	}
}

// TestPodReachesNothingOfTheHost: a pod cannot reach a listener on the
// host's loopback, nor bind another pod's IP.
func TestPodReachesNothingOfTheHost(t *testing.T) {
	n := testNodeNetwork(t)
	a := testPod(t, n, "10.244.0.100")
	b := testPod(t, n, "10.244.0.101")
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	serveName(host, "host")
	for _, ns := range []*Namespace{a.Namespace(), n.Namespace()} {
		if got, err := ask(ns, host.Addr().String()); err == nil {
			t.Errorf("the host's loopback listener %s answered %q from inside", host.Addr(), got)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dialing the host's loopback listener: %v, want connection refused (nothing listens in the namespace)", err)
		}
	}
	// No route leaves the node's namespace: an address outside (one kept for
	// documentation, TEST-NET-2) is unreachable, and the packet goes no
	// further than the node's namespace.
	if _, err := ask(a.Namespace(), "198.51.100.1:80"); !errors.Is(err, syscall.ENETUNREACH) && !errors.Is(err, syscall.EHOSTUNREACH) {
		t.Errorf("dialing 198.51.100.1 from a pod: %v, want unreachable", err)
	}
	_, err = a.Namespace().Listen("tcp", net.JoinHostPort(b.IP().String(), "8080"))
	if !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("pod %s binding pod %s's IP: %v, want EADDRNOTAVAIL", a.IP(), b.IP(), err)
	}
}

// TestPodCloseRemovesItsLink: a released pod's address is free for the next.
func TestPodCloseRemovesItsLink(t *testing.T) {
	n := testNodeNetwork(t)
	p := testPod(t, n, "10.244.0.100")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.handle.LinkByName(hostLinkName(p.IP())); err == nil {
		t.Errorf("%s is still on the bridge after Close", hostLinkName(p.IP()))
	}
	q := testPod(t, n, "10.244.0.100")
	l, err := q.Namespace().Listen("tcp", "10.244.0.100:80")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveName(l, "again")
	if got, err := ask(n.Namespace(), "10.244.0.100:80"); err != nil || got != "again" {
		t.Errorf("the new pod at the released address: %q, %v", got, err)
	}
}

// TestNodeNamespaceCannotTakeAClusterIP: a listener of the services
// namespace on a cluster IP, bound with SO_REUSEPORT as CoreDNS binds its
// address, keeps all of its traffic from a process of the node's namespace
// (where hostNetwork pods run): that process cannot bind the cluster IP, and
// binding it anyway (IP_FREEBIND), with SO_REUSEPORT or without, gets none
// of the datagrams a pod sends it.
func TestNodeNamespaceCannotTakeAClusterIP(t *testing.T) {
	n := testNodeNetwork(t)
	pod := testPod(t, n, "10.244.0.100")
	const dns = "10.96.0.10:53"
	var server net.PacketConn
	if err := n.ServicesNamespace().Do(func() error {
		var err error
		server, err = reusePortListenConfig(false).ListenPacket(context.Background(), "udp", dns)
		return err
	}); err != nil {
		t.Fatalf("the services namespace binding %s with SO_REUSEPORT: %v", dns, err)
	}
	defer server.Close()
	go func() {
		buf := make([]byte, 512)
		for {
			m, from, err := server.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = server.WriteTo(append([]byte("services: "), buf[:m]...), from)
		}
	}()

	squatters := bindSquatters(t, n.Namespace(), dns)
	if len(squatters) == 0 {
		t.Fatal("no squatter bound with IP_FREEBIND: the test would show nothing")
	}

	const lookups = 20
	for i := range lookups {
		var reply string
		err := pod.Namespace().Do(func() error {
			c, err := net.Dial("udp", dns)
			if err != nil {
				return err
			}
			defer c.Close()
			q := fmt.Sprintf("query %d", i)
			if _, err := c.Write([]byte(q)); err != nil {
				return err
			}
			// A reply lost to a squatter would never come: the deadline
			// turns that into a failure rather than a hang.
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 512)
			m, err := c.Read(buf)
			reply = string(buf[:m])
			return err
		})
		if want := fmt.Sprintf("services: query %d", i); err != nil || reply != want {
			t.Fatalf("lookup %d from a pod: %q, %v; want %q", i, reply, err, want)
		}
	}
	for _, c := range squatters {
		if queued := queuedBytes(t, c); queued != 0 {
			t.Errorf("a squatter in the node's namespace at %s holds %d bytes of the pods' datagrams", c.LocalAddr(), queued)
		}
	}
}

// bindSquatters binds dns over UDP in ns every way an unprivileged process
// may — with SO_REUSEPORT and without, with IP_FREEBIND and without — and
// returns the sockets that bound; without IP_FREEBIND a bind must fail with
// EADDRNOTAVAIL.
func bindSquatters(t *testing.T, ns *Namespace, dns string) []net.PacketConn {
	t.Helper()
	var squatters []net.PacketConn
	for _, freebind := range []bool{false, true} {
		for _, reusePort := range []bool{true, false} {
			var c net.PacketConn
			err := ns.Do(func() error {
				lc := reusePortListenConfig(freebind)
				if !reusePort {
					lc = freeBindListenConfig(freebind)
				}
				var err error
				c, err = lc.ListenPacket(context.Background(), "udp", dns)
				return err
			})
			switch {
			case err == nil:
				t.Logf("the node's namespace bound %s (IP_FREEBIND %v, SO_REUSEPORT %v)", dns, freebind, reusePort)
				squatters = append(squatters, c)
				t.Cleanup(func() { c.Close() })
			case !freebind && !errors.Is(err, syscall.EADDRNOTAVAIL):
				t.Errorf("the node's namespace binding %s (SO_REUSEPORT %v): %v, want EADDRNOTAVAIL", dns, reusePort, err)
			}
		}
	}
	return squatters
}

// reusePortListenConfig sets SO_REUSEPORT, and IP_FREEBIND when freebind.
func reusePortListenConfig(freebind bool) *net.ListenConfig {
	return &net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		return setSockopts(rc, freebind, true)
	}}
}

// freeBindListenConfig sets IP_FREEBIND when freebind, and nothing else.
func freeBindListenConfig(freebind bool) *net.ListenConfig {
	return &net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		return setSockopts(rc, freebind, false)
	}}
}

func setSockopts(rc syscall.RawConn, freebind, reusePort bool) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		if reusePort {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}
		if serr == nil && freebind {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// queuedBytes is what waits in c's receive queue (SIOCINQ).
func queuedBytes(t *testing.T, c net.PacketConn) int {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		t.Fatal(err)
	}
	if ierr != nil {
		t.Fatal(ierr)
	}
	return n
}
