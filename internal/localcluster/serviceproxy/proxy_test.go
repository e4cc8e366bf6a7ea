package serviceproxy

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

func loopbackOnly(t testing.TB) func(string) bool {
	t.Helper()
	cidrs, err := ParseCIDRs(DefaultCIDR)
	if err != nil {
		t.Fatal(err)
	}
	return cidrs.Contains
}

func TestParseServiceCIDRs(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
		in4     []string
		out     []string
	}{
		{in: "127.0.0.0/8", in4: []string{"127.0.0.1", "127.64.0.10", "::ffff:127.1.2.3"}, out: []string{"10.0.0.1", "::1", "None", "", "junk"}},
		{in: "127.64.0.1/16", in4: []string{"127.64.200.1"}, out: []string{"127.65.0.1"}},
		{in: "127.0.0.0/8, ::1/128", in4: []string{"::1", "127.0.0.2"}, out: []string{"::2"}},
		{in: "", wantErr: true},
		{in: "127.0.0.1", wantErr: true},
		{in: "10.0.0.0/33", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			c, err := ParseCIDRs(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			for _, ip := range tc.in4 {
				if !c.Contains(ip) {
					t.Errorf("%s not in %s", ip, tc.in)
				}
			}
			for _, ip := range tc.out {
				if c.Contains(ip) {
					t.Errorf("%s in %s", ip, tc.in)
				}
			}
		})
	}
}

// svc builds a Service; ports are "name:port/PROTO->target".
func svc(ns, name string, typ corev1.ServiceType, clusterIP string, selector map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: typ, ClusterIP: clusterIP, Selector: selector, Ports: ports},
	}
	if clusterIP != "" {
		s.Spec.ClusterIPs = []string{clusterIP}
	}
	return s
}

func sport(name string, port int32, proto corev1.Protocol, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, Protocol: proto, TargetPort: target}
}

func TestServiceListeners(t *testing.T) {
	app := map[string]string{"app": "web"}
	http := sport("http", 80, corev1.ProtocolTCP, intstr.FromInt32(8080))
	tests := []struct {
		name     string
		services []*corev1.Service
		want     []string // "address service/port"
		notes    []string // "service port: reason"
	}{
		{
			name:     "ClusterIP, NodePort and LoadBalancer get their cluster IP served",
			services: []*corev1.Service{svc("a", "c", "", "127.64.0.10", app, http), svc("a", "n", corev1.ServiceTypeNodePort, "127.64.0.11", app, http), svc("a", "l", corev1.ServiceTypeLoadBalancer, "127.64.0.12", app, http)},
			want:     []string{"127.64.0.10:80 a/c/http", "127.64.0.11:80 a/n/http", "127.64.0.12:80 a/l/http"},
		},
		{
			name:     "headless, ExternalName, no IP and other networks are not ours",
			services: []*corev1.Service{svc("a", "headless", "", "None", app, http), svc("a", "ext", corev1.ServiceTypeExternalName, "", nil, http), svc("a", "pending", "", "", app, http), svc("a", "real", "", "10.0.0.12", app, http)},
		},
		{
			name:     "every TCP port; protocol defaults to TCP; UDP and SCTP are noted",
			services: []*corev1.Service{svc("a", "dns", "", "127.64.0.10", app, sport("tcp", 53, "", intstr.FromInt32(5353)), sport("udp", 53, corev1.ProtocolUDP, intstr.FromInt32(5353)), sport("sctp", 99, corev1.ProtocolSCTP, intstr.IntOrString{}), sport("", 8443, corev1.ProtocolTCP, intstr.FromString("https")))},
			want:     []string{"127.64.0.10:53 a/dns/tcp", "127.64.0.10:8443 a/dns/"},
			notes:    []string{"a/dns udp: UDP is not proxied", "a/dns sctp: SCTP is not proxied"},
		},
		{
			name:     "no selector: noted, not served",
			services: []*corev1.Service{svc("default", "kubernetes", "", "127.64.0.1", nil, sport("https", 443, corev1.ProtocolTCP, intstr.FromInt32(6443)))},
			notes:    []string{"default/kubernetes : no selector: its endpoints are managed by hand, the node does not know them"},
		},
		{
			name: "dual stack: each eligible IP",
			services: []*corev1.Service{func() *corev1.Service {
				s := svc("a", "dual", "", "127.64.0.10", app, http)
				s.Spec.ClusterIPs = []string{"127.64.0.10", "::1", "fd00::10"}
				return s
			}()},
			want: []string{"127.64.0.10:80 a/dual/http", "[::1]:80 a/dual/http"},
		},
		{
			name:     "an address claimed twice (a stale cache) goes to the first by name",
			services: []*corev1.Service{svc("b", "new", "", "127.64.0.10", app, http), svc("a", "old", "", "127.64.0.10", app, http)},
			want:     []string{"127.64.0.10:80 a/old/http"},
			notes:    []string{"b/new http: 127.64.0.10:80 is taken by Service a/old"},
		},
	}
	eligible := func(ip string) bool {
		return ip == "::1" || loopbackOnly(t)(ip)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, notes := serviceListeners(tc.services, eligible)
			var got []string
			for addr, tg := range want {
				got = append(got, addr+" "+tg.service+"/"+tg.port.Name)
				if tg.namespace != strings.Split(tg.service, "/")[0] {
					t.Errorf("%s: namespace %q", addr, tg.namespace)
				}
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("listeners %q, want %q", got, tc.want)
			}
			var gotNotes []string
			for _, n := range notes {
				gotNotes = append(gotNotes, n.service+" "+n.port+": "+n.reason)
			}
			if !reflect.DeepEqual(gotNotes, tc.notes) && len(gotNotes)+len(tc.notes) > 0 {
				t.Errorf("notes %q, want %q", gotNotes, tc.notes)
			}
		})
	}
}

// backendPod is a running, Ready pod of namespace ns with an IP.
func backendPod(ns, name, ip string, lbls map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Ports: ports}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

func TestServiceBackends(t *testing.T) {
	web := map[string]string{"app": "web", "tier": "front"}
	target := func(tp intstr.IntOrString, publishNotReady bool) *serviceTarget {
		return &serviceTarget{service: "ns/web", namespace: "ns", selector: labels.SelectorFromSet(map[string]string{"app": "web"}),
			port: sport("http", 80, corev1.ProtocolTCP, tp), publishNotReady: publishNotReady}
	}
	modify := func(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }
	now := metav1.Now()
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		target *serviceTarget
		want   []string
	}{
		{
			name: "selector and namespace, sorted by name",
			pods: []*corev1.Pod{
				backendPod("ns", "web-b", "127.0.1.2", web),
				backendPod("ns", "web-a", "127.0.1.1", web),
				backendPod("ns", "db", "127.0.1.3", map[string]string{"app": "db"}),
				backendPod("other", "web-c", "127.0.1.4", web),
				backendPod("ns", "unlabelled", "127.0.1.5", nil),
			},
			target: target(intstr.FromInt32(8080), false),
			want:   []string{"ns/web-a 127.0.1.1:8080", "ns/web-b 127.0.1.2:8080"},
		},
		{
			name: "only running, Ready, not terminating pods with an IP",
			pods: []*corev1.Pod{
				backendPod("ns", "ok", "127.0.1.1", web),
				modify(backendPod("ns", "pending", "127.0.1.2", web), func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
				modify(backendPod("ns", "done", "127.0.1.3", web), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				modify(backendPod("ns", "unready", "127.0.1.4", web), func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }),
				modify(backendPod("ns", "no-conditions", "127.0.1.5", web), func(p *corev1.Pod) { p.Status.Conditions = nil }),
				modify(backendPod("ns", "terminating", "127.0.1.6", web), func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
				backendPod("ns", "no-ip", "", web),
			},
			target: target(intstr.FromInt32(8080), false),
			want:   []string{"ns/ok 127.0.1.1:8080"},
		},
		{
			name: "publishNotReadyAddresses admits unready pods, not terminating ones",
			pods: []*corev1.Pod{
				modify(backendPod("ns", "unready", "127.0.1.4", web), func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }),
				modify(backendPod("ns", "terminating", "127.0.1.6", web), func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
			},
			target: target(intstr.FromInt32(8080), true),
			want:   []string{"ns/unready 127.0.1.4:8080"},
		},
		{
			name:   "no targetPort: the Service port",
			pods:   []*corev1.Pod{backendPod("ns", "a", "127.0.1.1", web)},
			target: target(intstr.IntOrString{}, false),
			want:   []string{"ns/a 127.0.1.1:80"},
		},
		{
			name: "named targetPort: each pod's own number; pods without it are left out",
			pods: []*corev1.Pod{
				backendPod("ns", "a", "127.0.1.1", web, corev1.ContainerPort{Name: "metrics", ContainerPort: 9090}, corev1.ContainerPort{Name: "web", ContainerPort: 8080}),
				backendPod("ns", "b", "127.0.1.2", web, corev1.ContainerPort{Name: "web", ContainerPort: 9000, Protocol: corev1.ProtocolTCP}),
				backendPod("ns", "udp", "127.0.1.3", web, corev1.ContainerPort{Name: "web", ContainerPort: 9000, Protocol: corev1.ProtocolUDP}),
				backendPod("ns", "none", "127.0.1.4", web),
			},
			target: target(intstr.FromString("web"), false),
			want:   []string{"ns/a 127.0.1.1:8080", "ns/b 127.0.1.2:9000"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range serviceBackends(tc.pods, tc.target) {
				got = append(got, b.pod+" "+b.addr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("backends %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTargetPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP}}},
		{Name: "b", Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 5354}, {Name: "https", ContainerPort: 9443}}},
	}}}
	tests := []struct {
		port   corev1.ServicePort
		want   int32
		wantOK bool
	}{
		{sport("", 443, "", intstr.FromInt32(9443)), 9443, true},
		{sport("", 443, "", intstr.IntOrString{}), 443, true},
		{sport("", 443, "", intstr.FromString("https")), 9443, true},
		{sport("", 53, corev1.ProtocolTCP, intstr.FromString("dns")), 5354, true},
		{sport("", 53, corev1.ProtocolUDP, intstr.FromString("dns")), 5353, true},
		{sport("", 443, "", intstr.FromString("missing")), 0, false},
	}
	for _, tc := range tests {
		got, ok := targetPort(pod, tc.port)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s %s: got %d %v, want %d %v", tc.port.Protocol, tc.port.TargetPort.String(), got, ok, tc.want, tc.wantOK)
		}
	}
}

// proxyFixture runs a Proxy over in-memory listers.
type proxyFixture struct {
	proxy    *Proxy
	services cache.Indexer
	pods     cache.Indexer
}

func newProxyFixture(t testing.TB) *proxyFixture {
	t.Helper()
	f := &proxyFixture{
		services: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		pods:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
	}
	f.proxy = New(logr.Discard(), corev1listers.NewServiceLister(f.services), corev1listers.NewPodLister(f.pods), loopbackOnly(t))
	f.proxy.Start()
	t.Cleanup(f.proxy.Stop)
	return f
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

// echoBackend serves on ip:0, answering each connection with its name and
// what the client sent before closing its side.
func echoBackend(t testing.TB, ip, name string) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				data, _ := io.ReadAll(c)
				fmt.Fprintf(c, "%s: %s", name, data)
			}()
		}
	}()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// TestServiceProxyForwards runs the proxy over in-memory listers and real
// sockets: backends listen on 127.0.0.1 and 127.0.0.2, each on a port of
// its own named "echo".
func TestServiceProxyForwards(t *testing.T) {
	f := newProxyFixture(t)
	ip := randomServiceIP()
	labelsOf := map[string]string{"app": "echo"}
	portA := echoBackend(t, "127.0.0.1", "a")
	portB := echoBackend(t, "127.0.0.2", "b")
	for _, p := range []*corev1.Pod{
		backendPod("ns", "a", "127.0.0.1", labelsOf, corev1.ContainerPort{Name: "echo", ContainerPort: portA}),
		backendPod("ns", "b", "127.0.0.2", labelsOf, corev1.ContainerPort{Name: "echo", ContainerPort: portB}),
	} {
		if err := f.pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	service := svc("ns", "echo", "", ip, labelsOf, sport("echo", 7000, corev1.ProtocolTCP, intstr.FromString("echo")))
	f.setService(t, service)
	addr := net.JoinHostPort(ip, "7000")

	t.Run("round robin with half-close", func(t *testing.T) {
		var got []string
		for i := range 4 {
			reply, err := testutil.Exchange(addr, "ping"+strconv.Itoa(i))
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
		dead := backendPod("ns", "0-dead", "127.0.0.3", labelsOf, corev1.ContainerPort{Name: "echo", ContainerPort: portA})
		if err := f.pods.Add(dead); err != nil {
			t.Fatal(err)
		}
		defer f.pods.Delete(dead)
		seen := map[string]int{}
		for range 6 {
			reply, err := testutil.Exchange(addr, "x")
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
		for _, name := range []string{"a", "b"} {
			obj, _, _ := f.pods.GetByKey("ns/" + name)
			p := obj.(*corev1.Pod).DeepCopy()
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			if err := f.pods.Update(p); err != nil {
				t.Fatal(err)
			}
			defer f.pods.Update(obj)
		}
		reply, err := testutil.Exchange(addr, "x")
		if err == nil {
			t.Fatalf("got %q, want a reset", reply)
		}
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Logf("error %v (not a reset)", err)
		}
	})

	t.Run("a changed Service keeps its listener, with the new target", func(t *testing.T) {
		changed := service.DeepCopy()
		changed.Spec.Ports[0].TargetPort = intstr.FromInt32(portB)
		changed.Spec.Selector = map[string]string{"app": "echo"}
		f.setService(t, changed)
		// Only b listens on portB at its IP; a refuses.
		for range 3 {
			if reply, err := testutil.Exchange(addr, "y"); err != nil || reply != "b: y" {
				t.Fatalf("got %q, %v; want b", reply, err)
			}
		}
	})

	t.Run("stop closes open connections and listeners", func(t *testing.T) {
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
		deadline := time.Now().Add(5 * time.Second)
		for f.proxy.openConns() < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("the proxy holds %d connections, want the client's and the backend's", f.proxy.openConns())
			}
			time.Sleep(time.Millisecond)
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
	})
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
	if err := f.pods.Add(backendPod("ns", "a", "127.0.0.1", map[string]string{"app": "echo"}, corev1.ContainerPort{Name: "echo", ContainerPort: port})); err != nil {
		b.Fatal(err)
	}
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
	go func() { pipe(a, b); close(done) }()

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
