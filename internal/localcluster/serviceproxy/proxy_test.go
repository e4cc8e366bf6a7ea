package serviceproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

// proxyFixture runs a Proxy over in-memory listers, on the host's loopback
// addresses through a network that records what the proxy does with it.
type proxyFixture struct {
	proxy    *Proxy
	services cache.Indexer
	slices   cache.Indexer
	network  *recordingNetwork
}

func newProxyFixture(t testing.TB) *proxyFixture {
	t.Helper()
	f := &proxyFixture{
		services: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		slices:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		network:  &recordingNetwork{},
	}
	f.proxy = New(Config{
		Log:            logr.Discard(),
		Services:       corev1listers.NewServiceLister(f.services),
		EndpointSlices: discoverylisters.NewEndpointSliceLister(f.slices),
		Synced:         func() bool { return true },
		Eligible:       loopbackOnly(t),
		Network:        f.network,
	})
	f.proxy.Start()
	t.Cleanup(f.proxy.Stop)
	return f
}

// setSlice adds or replaces an EndpointSlice; connections read it when
// they arrive.
func (f *proxyFixture) setSlice(t testing.TB, s *discoveryv1.EndpointSlice) {
	t.Helper()
	if err := f.slices.Update(s); err != nil {
		t.Fatal(err)
	}
}

// recordingNetwork is the host's network, recording the addresses the
// proxy listens on and dials.
type recordingNetwork struct {
	mu       sync.Mutex
	listened []string
	dialed   []string
}

func (n *recordingNetwork) Listen(network, addr string) (net.Listener, error) {
	n.mu.Lock()
	n.listened = append(n.listened, addr)
	n.mu.Unlock()
	return HostNetwork{}.Listen(network, addr)
}

func (n *recordingNetwork) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	n.dialed = append(n.dialed, addr)
	n.mu.Unlock()
	return HostNetwork{}.DialContext(ctx, network, addr)
}

func (n *recordingNetwork) record() (listened, dialed []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.listened), slices.Clone(n.dialed)
}

func (f *proxyFixture) setService(t testing.TB, s *corev1.Service) {
	t.Helper()
	if err := f.services.Update(s); err != nil {
		t.Fatal(err)
	}
	if !f.proxy.sync() {
		t.Fatalf("a listener of %s could not be opened", s.Name)
	}
}

// randomServiceIP is an address of 127.200.0.0/16, so that tests running at
// once rarely pick the same.
func randomServiceIP() string {
	return fmt.Sprintf("127.200.%d.%d", rand.IntN(256), 1+rand.IntN(254))
}

// echoBackend serves ServeEcho's answers on ip:0, and returns the port.
func echoBackend(t testing.TB, ip, name string) int32 {
	return int32(testutil.ListenEcho(t, ip+":0", name).Addr().(*net.TCPAddr).Port)
}

// TestServiceProxyForwards runs the proxy over in-memory listers and real
// sockets: backends listen on 127.0.0.1 and 127.0.0.2, each on a port of
// its own named "echo", so each is in an EndpointSlice of its own.
func TestServiceProxyForwards(t *testing.T) {
	f := newProxyFixture(t)
	e := newEchoPair(t, f)

	t.Run("listens and dials through the network it is given", func(t *testing.T) { checkUsesNetwork(t, f, e) })

	t.Run("round robin with half-close", func(t *testing.T) {
		var got []string
		for i := range 4 {
			reply, err := testutil.Exchange(e.addr, "ping"+strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, reply)
		}
		if !reflect.DeepEqual(got, []string{"a: ping0", "b: ping1", "a: ping2", "b: ping3"}) && !reflect.DeepEqual(got, []string{"b: ping0", "a: ping1", "b: ping2", "a: ping3"}) {
			t.Errorf("replies %q, want a and b in turn", got)
		}
	})

	t.Run("a backend that refuses is skipped", func(t *testing.T) {
		// Sorted first, so some connections try it before a or b.
		dead := endpointSlice("ns", "echo-dead", "echo", discoveryv1.AddressTypeIPv4, slicePortOf("echo", e.portA), endpoint("0-dead", "127.0.0.3", readyPod))
		f.setSlice(t, dead)
		defer f.slices.Delete(dead)
		seen := map[string]int{}
		for range 6 {
			reply, err := testutil.Exchange(e.addr, "x")
			if err != nil {
				t.Fatal(err)
			}
			seen[reply]++
		}
		if seen["a: x"] == 0 || seen["b: x"] == 0 || seen["a: x"]+seen["b: x"] != 6 {
			t.Errorf("replies %v", seen)
		}
	})

	t.Run("no ready backend resets the connection", func(t *testing.T) {
		for _, name := range []string{"echo-a", "echo-b"} {
			obj, _, _ := f.slices.GetByKey("ns/" + name)
			s := obj.(*discoveryv1.EndpointSlice).DeepCopy()
			s.Endpoints[0].Conditions = endpoint("", "", unreadyPod).Conditions
			f.setSlice(t, s)
			defer f.slices.Update(obj)
		}
		reply, err := testutil.Exchange(e.addr, "x")
		if err == nil {
			t.Fatalf("got %q, want a reset", reply)
		}
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Logf("error %v (not a reset)", err)
		}
	})

	t.Run("a changed Service keeps its listener, with the new target", func(t *testing.T) {
		// The port is renamed; only b's slice has a port of the new name.
		changed := e.service.DeepCopy()
		changed.Spec.Ports[0].Name = "b-only"
		f.setSlice(t, endpointSlice("ns", "echo-b-only", "echo", discoveryv1.AddressTypeIPv4, slicePortOf("b-only", e.portB), endpoint("b", "127.0.0.2", readyPod)))
		f.setService(t, changed)
		for range 3 {
			if reply, err := testutil.Exchange(e.addr, "y"); err != nil || reply != "b: y" {
				t.Fatalf("got %q, %v; want b", reply, err)
			}
		}
	})

	t.Run("stop closes open connections and listeners", func(t *testing.T) {
		checkStopClosesConnections(t, f, e.addr)
	})
}

// checkUsesNetwork checks that the proxy listened on the Service's address
// and dials the backends through the network the fixture gave it.
func checkUsesNetwork(t *testing.T, f *proxyFixture, e echoPair) {
	t.Helper()
	if reply, err := testutil.Exchange(e.addr, "via"); err != nil || !strings.HasSuffix(reply, ": via") {
		t.Fatalf("got %q, %v", reply, err)
	}
	listened, dialed := f.network.record()
	if !slices.Contains(listened, e.addr) {
		t.Errorf("listened on %q through the network, want %s among them", listened, e.addr)
	}
	if len(dialed) == 0 || !slices.Contains([]string{e.backendA, e.backendB}, dialed[len(dialed)-1]) {
		t.Errorf("dialed %q through the network, want %s or %s last", dialed, e.backendA, e.backendB)
	}
}

// echoPair is a Service "echo" on port 7000 of a random service IP in front
// of two ready pods: a on 127.0.0.1 and b on 127.0.0.2, each serving an
// echo backend on a port of its own named "echo", as the EndpointSlices
// echo-a and echo-b say.
type echoPair struct {
	service            *corev1.Service
	addr               string
	portA, portB       int32
	backendA, backendB string
}

func newEchoPair(t *testing.T, f *proxyFixture) echoPair {
	t.Helper()
	var e echoPair
	e.portA = echoBackend(t, "127.0.0.1", "a")
	e.portB = echoBackend(t, "127.0.0.2", "b")
	e.backendA = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(e.portA)))
	e.backendB = net.JoinHostPort("127.0.0.2", strconv.Itoa(int(e.portB)))
	f.setSlice(t, endpointSlice("ns", "echo-a", "echo", discoveryv1.AddressTypeIPv4, slicePortOf("echo", e.portA), endpoint("a", "127.0.0.1", readyPod)))
	f.setSlice(t, endpointSlice("ns", "echo-b", "echo", discoveryv1.AddressTypeIPv4, slicePortOf("echo", e.portB), endpoint("b", "127.0.0.2", readyPod)))
	ip := randomServiceIP()
	e.service = svc("ns", "echo", "", ip, map[string]string{"app": "echo"}, sport("echo", 7000, corev1.ProtocolTCP, intstr.FromString("echo")))
	f.setService(t, e.service)
	e.addr = net.JoinHostPort(ip, "7000")
	return e
}

// checkStopClosesConnections stops the proxy while a connection to addr is
// piped to a backend: Stop returns, the connection ends, the listener is
// closed, and a second Stop (the cleanup's) is harmless.
func checkStopClosesConnections(t *testing.T, f *proxyFixture, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "half"); err != nil {
		t.Fatal(err)
	}
	// Stop must close a connection that is piped to a backend: wait
	// until the proxy has both ends.
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) { return f.proxy.openConns() >= 2, nil }); err != nil {
		t.Fatalf("the proxy holds %d connections, want the client's and the backend's", f.proxy.openConns())
	}
	stopped := make(chan struct{})
	go func() { f.proxy.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return")
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadAll(c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reading a connection of a stopped proxy: %v", err)
	}
	if testutil.Listening(addr) {
		t.Error("the listener is still open after stop")
	}
	f.proxy.Stop() // again, as the cleanup does: harmless
}

// How long one connection takes — connect, request, reply — straight to a
// backend and through the proxy, on loopback:
//
//	go test ./internal/localcluster/serviceproxy -run '^$' -bench ServiceProxyConnection -benchtime 2000x
//
// (part of make bench; results in docs/benchmarks.md).
func BenchmarkServiceProxyConnection(b *testing.B) {
	f := newProxyFixture(b)
	ip := randomServiceIP()
	port := echoBackend(b, "127.0.0.1", "a")
	f.setSlice(b, endpointSlice("ns", "echo-a", "echo", discoveryv1.AddressTypeIPv4, slicePortOf("echo", port), endpoint("a", "127.0.0.1", readyPod)))
	f.setService(b, svc("ns", "echo", "", ip, map[string]string{"app": "echo"}, sport("echo", 7000, corev1.ProtocolTCP, intstr.FromString("echo"))))
	for _, bc := range []struct{ name, addr string }{
		{"direct", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))},
		{"proxy", net.JoinHostPort(ip, "7000")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if reply, err := testutil.Exchange(bc.addr, "x"); err != nil || reply != "a: x" {
					b.Fatalf("got %q, %v", reply, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/conn")
		})
	}
}

func TestServiceProxyListenerLifecycle(t *testing.T) {
	f := newProxyFixture(t)
	ip := randomServiceIP()
	addr := net.JoinHostPort(ip, "7001")
	s := svc("ns", "web", "", ip, map[string]string{"app": "web"}, sport("web", 7001, "", intstr.FromInt32(80)))
	f.setService(t, s)
	if !testutil.Listening(addr) {
		t.Fatal("no listener after the Service appeared")
	}

	// The address passes to another Service: the listener is reopened.
	other := svc("ns", "other", "", ip, map[string]string{"app": "other"}, sport("web", 7001, "", intstr.FromInt32(80)))
	if err := f.services.Delete(s); err != nil {
		t.Fatal(err)
	}
	f.setService(t, other)
	f.proxy.mu.Lock()
	l := f.proxy.listeners[addr]
	f.proxy.mu.Unlock()
	if l == nil || l.target.Load().service != "ns/other" {
		t.Fatalf("listener %v, want one for ns/other", l)
	}

	if err := f.services.Delete(other); err != nil {
		t.Fatal(err)
	}
	f.proxy.sync()
	if testutil.Listening(addr) {
		t.Fatal("the listener stays open after the Service was deleted")
	}

	// An address in use is retried: sync reports it, and succeeds once it
	// is free.
	busy, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.services.Add(s); err != nil {
		t.Fatal(err)
	}
	if f.proxy.sync() {
		t.Fatal("sync reported success with the address in use")
	}
	busy.Close()
	if !f.proxy.sync() {
		t.Fatal("sync failed with the address free")
	}
}

func TestPipeHalfClose(t *testing.T) {
	// client <-> proxy side a ... proxy side b <-> server
	clientEnd, a := tcpPair(t)
	b, serverEnd := tcpPair(t)
	done := make(chan struct{})
	go func() { Pipe(a, b); close(done) }()

	// The client finishes its request; the server sees EOF, still answers.
	io.WriteString(clientEnd, "request")
	clientEnd.(*net.TCPConn).CloseWrite()
	req, err := io.ReadAll(serverEnd)
	if err != nil || string(req) != "request" {
		t.Fatalf("server read %q, %v", req, err)
	}
	io.WriteString(serverEnd, "response")
	serverEnd.Close()
	resp, err := io.ReadAll(clientEnd)
	if err != nil || string(resp) != "response" {
		t.Fatalf("client read %q, %v", resp, err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("pipe did not end after both sides closed")
	}
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// openConns is how many connections the proxy tracks.
func (p *Proxy) openConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}
