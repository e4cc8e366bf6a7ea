//go:build integration

package node

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// TestServiceProxyEndpointConditions runs the Service proxy, wired as the
// node wires it, on the endpoint conditions the controller manager derives
// from pods' status, and on selectorless Services' hand-made endpoints.
// The pods are bound to a node without a kubelet ("backend-host"): the
// test writes their status (IP, Ready) as a kubelet would, and nothing
// finishes their deletion, so they stay terminating. Their servers are the
// test's own, on the pods' IPs in a network namespace the test makes as the
// node makes its own: lo up, the service range local on lo, and the pods'
// IPs on lo.
func TestServiceProxyEndpointConditions(t *testing.T) {
	t.Parallel()
	client, testNet, ns, addr := startConditionsFixture(t)
	ctx := context.Background()
	pods := client.CoreV1().Pods(ns)
	services := client.CoreV1().Services(ns)

	t.Run("readiness: an unready pod gets no connections until Ready again", func(t *testing.T) {
		setPodReady(t, client, ns, "echo-b", false)
		waitOnlyServes(t, testNet, addr, "echo-a")
		setPodReady(t, client, ns, "echo-b", true)
		waitServed(t, testNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-b: ") })
	})

	t.Run("selectorless Service with a hand-made EndpointSlice", func(t *testing.T) {
		checkHandMadeSlice(t, client, testNet, ns, services)
	})

	t.Run("selectorless Service with hand-made Endpoints, mirrored into a slice", func(t *testing.T) {
		checkMirroredEndpoints(t, client, testNet, ns, services)
	})

	t.Run("terminating pods: none while another is ready, all while none is", func(t *testing.T) {
		// No kubelet finishes the deletion: the pods stay terminating.
		if err := pods.Delete(ctx, "echo-b", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](300)}); err != nil {
			t.Fatal(err)
		}
		waitOnlyServes(t, testNet, addr, "echo-a")
		if err := pods.Delete(ctx, "echo-a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](300)}); err != nil {
			t.Fatal(err)
		}
		// Both still pass readiness (serving): connections go to both.
		waitServed(t, testNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-b: ") })
		waitServed(t, testNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-a: ") })
		for _, name := range []string{"echo-a", "echo-b"} {
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
		}
		waitUntil(t, "connections to echo closed once its pods are gone", func() bool {
			_, err := testutil.ExchangeWith(testNet.DialContext, addr, "x")
			return err != nil
		})
	})
}

// startConditionsFixture starts TestServiceProxyEndpointConditions' API
// server, controller manager, network namespace, proxy and backends: the
// Service echo, whose port 8080 (addr) targets the port each pod names
// "echo", in front of echo-a and echo-b, Ready, in namespace ns.
func startConditionsFixture(t *testing.T) (client kubernetes.Interface, testNet *podnetwork.Namespace, ns, addr string) {
	t.Helper()
	cfg := serviceTestCluster(t)
	testNet = newServiceNetwork(t, backendA.ip, backendB.ip)
	client = kubernetes.NewForConfigOrDie(cfg)
	startProxy(t, client, testNet)
	ctx := context.Background()
	ns = "conditions"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "backend-host"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []testBackend{backendA, backendB} {
		ln, err := testNet.Listen("tcp", hostPort(b.ip, int(b.port)))
		if err != nil {
			t.Fatal(err)
		}
		testutil.ServeEcho(t, ln, b.pod)
		createStatusOnlyPod(t, client, ns, b)
	}
	echo := createService(t, client.CoreV1().Services(ns), "echo", map[string]string{"app": "echo"},
		corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromString("echo")})
	addr = hostPort(echo.Spec.ClusterIP, 8080)
	waitServed(t, testNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-a: ") })
	waitServed(t, testNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-b: ") })
	return client, testNet, ns, addr
}

// checkHandMadeSlice checks a selectorless Service whose EndpointSlice the
// test makes: it leads to echo-a.
func checkHandMadeSlice(t *testing.T, client kubernetes.Interface, testNet *podnetwork.Namespace, ns string, services serviceClient) {
	t.Helper()
	s := createService(t, services, "by-hand", nil, corev1.ServicePort{Name: "http", Port: 8082})
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "by-hand-1", Labels: map[string]string{discoveryv1.LabelServiceName: "by-hand"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(backendA.port)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{backendA.ip}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOnlyServes(t, testNet, hostPort(s.Spec.ClusterIP, 8082), "echo-a")
}

// checkMirroredEndpoints checks a selectorless Service whose Endpoints the
// test makes and the controller manager mirrors into a slice: it leads to
// echo-b.
func checkMirroredEndpoints(t *testing.T, client kubernetes.Interface, testNet *podnetwork.Namespace, ns string, services serviceClient) {
	t.Helper()
	s := createService(t, services, "mirrored", nil, corev1.ServicePort{Name: "http", Port: 8083})
	if _, err := client.CoreV1().Endpoints(ns).Create(context.Background(), &corev1.Endpoints{ //nolint:staticcheck // the mirroring controller's input
		ObjectMeta: metav1.ObjectMeta{Name: "mirrored"},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
			Addresses: []corev1.EndpointAddress{{IP: backendB.ip}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: backendB.port}}, //nolint:staticcheck // as above
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOnlyServes(t, testNet, hostPort(s.Spec.ClusterIP, 8083), "echo-b")
}

// The status-only backends of TestServiceProxyEndpointConditions: each
// container names its own port "echo".
var (
	backendA = testBackend{pod: "echo-a", ip: "10.244.0.101", port: 7000}
	backendB = testBackend{pod: "echo-b", ip: "10.244.1.102", port: 7001}
)

type testBackend struct {
	pod, ip string
	port    int32
}

// createStatusOnlyPod creates b's pod on backend-host, Running and Ready
// at b's IP, as its kubelet would report it.
func createStatusOnlyPod(t *testing.T, client kubernetes.Interface, ns string, b testBackend) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: b.pod, Namespace: ns, Labels: map[string]string{"app": "echo"}},
		Spec: corev1.PodSpec{NodeName: "backend-host", Containers: []corev1.Container{{
			Name: "main", Image: "example.com/server",
			Ports: []corev1.ContainerPort{{Name: "echo", ContainerPort: b.port}},
		}}},
	}
	created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: b.ip, PodIPs: []corev1.PodIP{{IP: b.ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startProxy runs a Service proxy in nodeNet, made as the node makes its
// own (newServiceProxy), until the test ends.
func startProxy(t *testing.T, client kubernetes.Interface, nodeNet *podnetwork.Namespace) {
	t.Helper()
	cidrs := serviceproxy.CIDRs{netip.MustParsePrefix(serviceproxy.DefaultCIDR)}
	factory := informers.NewSharedInformerFactory(client, 0)
	proxy, err := newServiceProxy(logr.Discard(), factory, cidrs, nodeNet)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	proxy.Start()
	t.Cleanup(func() {
		proxy.Stop()
		close(stop)
		factory.Shutdown()
	})
}

// newServiceNetwork makes a network namespace standing in for the node's:
// lo up with podIPs on it, and the service range routed to lo as local
// addresses, so the proxy can bind any cluster IP.
func newServiceNetwork(t *testing.T, podIPs ...string) *podnetwork.Namespace {
	t.Helper()
	ns, err := podnetwork.New()
	if err != nil {
		t.Fatalf("creating the test's network namespace (needs root or a user namespace's root): %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	_, serviceRange, err := net.ParseCIDR(serviceproxy.DefaultCIDR)
	if err != nil {
		t.Fatal(err)
	}
	// Package-level netlink calls open their socket in the calling thread's
	// namespace: inside Do, this one's.
	err = ns.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return err
		}
		for _, ip := range podIPs {
			if err := netlink.AddrAdd(lo, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(ip), Mask: net.CIDRMask(32, 32)}}); err != nil {
				return fmt.Errorf("adding %s: %w", ip, err)
			}
		}
		return netlink.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: serviceRange,
			Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST})
	})
	if err != nil {
		t.Fatalf("setting up the test's network namespace: %v", err)
	}
	return ns
}

// setPodReady writes the pod's Ready condition, as its kubelet would.
func setPodReady(t *testing.T, client kubernetes.Interface, ns, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitOnlyServes waits until four connections in a row to addr are
// answered by who.
func waitOnlyServes(t *testing.T, nodeNet *podnetwork.Namespace, addr, who string) {
	t.Helper()
	waitServed(t, nodeNet, addr, func(string) bool {
		for range 4 {
			if reply, err := testutil.ExchangeWith(nodeNet.DialContext, addr, "x"); err != nil || reply != who+": x" {
				return false
			}
		}
		return true
	})
}
