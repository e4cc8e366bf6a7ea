//go:build integration

package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The Service proxy's integration tests run on a real API server whose
// Services get cluster IPs of the node's default service range, with a real
// kube-controller-manager running the EndpointSlice and mirroring
// controllers: the proxy forwards to what those controllers write.
// TestServiceProxy runs the whole node with real pods; the endpoint
// conditions a kubelet would write (readiness, termination) are played by
// TestServiceProxyEndpointConditions.

// backendEnv is the kind of Service backend serveBackend is.
const backendEnv = "NODE_TEST_SERVICE_BACKEND"

// Ports the backend pods listen on, at their pod IP. Each echo pod also
// serves on the port its container names "echo" (ECHO_PORT).
const (
	echoNumberedPort = 7100
	peerPort         = 7200
	tlsPort          = 8443
)

// serveBackend is the program of TestServiceProxy's backend pods, which run
// this test binary as the "service-backend" helper (see runHelper) with
// backendEnv set; it serves until killed. "echo" answers each connection,
// once the client has half-closed it, with "<hostname>: <what the client
// sent>" on echoNumberedPort and "<hostname> <port>: ..." on ECHO_PORT, and
// with the client's IP on peerPort; "tls" serves HTTPS with the certificate
// in /tls.
func serveBackend(mode string) int {
	host, _ := os.Hostname()
	ip := os.Getenv("POD_IP")
	switch mode {
	case "echo":
		named := os.Getenv("ECHO_PORT")
		listeners := map[string]func(net.Conn){
			strconv.Itoa(echoNumberedPort): func(c net.Conn) { data, _ := io.ReadAll(c); fmt.Fprintf(c, "%s: %s", host, data) },
			named:                          func(c net.Conn) { data, _ := io.ReadAll(c); fmt.Fprintf(c, "%s %s: %s", host, named, data) },
			strconv.Itoa(peerPort):         func(c net.Conn) { fmt.Fprint(c, c.RemoteAddr().(*net.TCPAddr).IP.String()) },
		}
		failed := make(chan error)
		for port, answer := range listeners {
			ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
			if err != nil {
				fmt.Println("listen error:", err)
				return 1
			}
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						failed <- err
						return
					}
					go func() { defer c.Close(); answer(c) }()
				}
			}()
		}
		fmt.Println("accept error:", <-failed)
		return 1
	case "tls":
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s over TLS: %s %s %s", host, r.Method, r.URL.Path, body)
		})
		srv := &http.Server{Addr: net.JoinHostPort(ip, strconv.Itoa(tlsPort)), Handler: handler}
		fmt.Println("serve error:", srv.ListenAndServeTLS("/tls/tls.crt", "/tls/tls.key"))
		return 1
	}
	fmt.Printf("unknown backend %q\n", mode)
	return 2
}

// runServiceHelper runs the helpers of the Service tests: "service-backend"
// (serveBackend) and "exchange" (sends args[1] to args[0], half-closes,
// prints the reply). ok is false for other names.
func runServiceHelper(name string, args []string) (code int, ok bool) {
	switch name {
	case "service-backend":
		return serveBackend(os.Getenv(backendEnv)), true
	case "exchange":
		reply, err := testutil.ExchangeWith((&net.Dialer{Timeout: 10 * time.Second}).DialContext, args[0], args[1])
		if err != nil {
			reply = "error: " + err.Error()
		}
		fmt.Println(reply)
		return 0, true
	}
	return 0, false
}

// TestServiceProxy runs the node with real pods behind Services: the node
// proxies, in its network namespace, each cluster IP's connections to the
// pods' IPs the controller manager put in the EndpointSlices. Clients are
// the test, dialling in the node's namespace (as the API server's egress
// does), and a pod.
func TestServiceProxy(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	started := time.Now()
	cfg := serviceTestCluster(t)
	t.Logf("API server (service range %s) and controller manager up in %s", serviceproxy.DefaultCIDR, time.Since(started).Round(time.Millisecond))
	n := newTestNode(t, cfg, "service-node", false)
	stopNode := func() {
		if n.stop != nil {
			n.stop()
			<-n.stopped
			n.stop = nil
		}
	}
	t.Cleanup(func() {
		stopNode()
		n.removeState()
	})
	nodeNet := n.NetworkNamespace()
	ns := n.namespace(t)
	ctx := context.Background()
	services := n.client.CoreV1().Services(ns)
	b := startServiceBackends(t, n, ns)
	byNumber := hostPort(b.echo.Spec.ClusterIP, 8080)
	byName := hostPort(b.echo.Spec.ClusterIP, 8081)
	peer := hostPort(b.echo.Spec.ClusterIP, 8084)
	webhookAddr := hostPort(b.webhook.Spec.ClusterIP, 9443)
	if !strings.HasPrefix(b.echo.Spec.ClusterIP, "10.96.") {
		t.Fatalf("cluster IP %s is not in %s", b.echo.Spec.ClusterIP, serviceproxy.DefaultCIDR)
	}

	t.Run("round trip and round robin", func(t *testing.T) { checkRoundRobin(t, nodeNet, byNumber) })

	t.Run("target port by name: each pod's own number, from two slices", func(t *testing.T) {
		checkNamedTargetPort(t, n.client, nodeNet, ns, byName)
	})

	t.Run("a pod reaches a Service by its cluster IP; the backend sees the services namespace as the client", func(t *testing.T) {
		checkPodClient(t, n, ns, byNumber, peer)
	})

	t.Run("large transfer both ways", func(t *testing.T) {
		payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		reply, err := testutil.ExchangeWith(nodeNet.DialContext, byNumber, string(payload))
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(reply, ": ")
		if body != string(payload) {
			t.Fatalf("got %d bytes back, want %d", len(body), len(payload))
		}
	})

	t.Run("TLS through the proxy", func(t *testing.T) {
		checkWebhookCall(t, nodeNet, webhookAddr, b.caPool, "tls."+ns+".svc")
	})

	t.Run("a deleted pod gets no connections", func(t *testing.T) {
		if err := n.client.CoreV1().Pods(ns).Delete(ctx, "echo-b", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitOnlyServes(t, nodeNet, byNumber, "echo-a")
	})

	t.Run("no ready backend; the listener goes with the Service", func(t *testing.T) { checkNoReadyBackend(t, nodeNet, services) })

	t.Run("node shutdown closes listeners and connections", func(t *testing.T) {
		checkShutdownClosesProxy(t, nodeNet, n.network.ServicesNamespace(), stopNode, webhookAddr, []string{byNumber, byName, webhookAddr})
	})
}

// checkNamedTargetPort checks that addr, the echo Service's port whose
// target port is named "echo", reaches each pod on the number it gives that
// name (echo-a 7000, echo-b 7001), which the controller manager put in two
// slices.
func checkNamedTargetPort(t *testing.T, client kubernetes.Interface, nodeNet *podnetwork.Namespace, ns, addr string) {
	t.Helper()
	waitServed(t, nodeNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-a 7000: ") })
	waitServed(t, nodeNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-b 7001: ") })
	slices, err := client.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=echo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(slices.Items) != 2 {
		t.Errorf("%d EndpointSlices of echo, want 2 (one per port numbering)", len(slices.Items))
	}
}

// checkPodClient runs a pod that exchanges a message with echoAddr and asks
// peerAddr who it is: a pod reaches a cluster IP through its gateway, and
// the backend sees the services namespace, where the proxy dials from, as
// the client.
func checkPodClient(t *testing.T, n *testNode, ns, echoAddr, peerAddr string) {
	t.Helper()
	client := n.shellPod(ns, "client", "")
	client.Spec.Containers = []corev1.Container{
		helperContainer(t, "exchange", "exchange", echoAddr, "from a pod"),
		helperContainer(t, "peer", "exchange", peerAddr, ""),
	}
	n.create(t, client)
	n.waitPhase(t, ns, "client", corev1.PodSucceeded)
	if got := strings.TrimSpace(n.logs(t, ns, "client", "exchange", "")); got != "echo-a: from a pod" && got != "echo-b: from a pod" {
		t.Errorf("the pod got %q, want echo-a or echo-b answering", got)
	}
	if got := strings.TrimSpace(n.logs(t, ns, "client", "peer", "")); got != "10.244.0.2" {
		t.Errorf("the backend saw the client as %q, want the services namespace's 10.244.0.2", got)
	}
}

// serviceBackendPods are TestServiceProxy's Services and what a client of
// the TLS one trusts.
type serviceBackendPods struct {
	// echo has ports 8080 (target by number), 8081 (by name), 8084 (the
	// peer port) and a UDP port the proxy leaves alone, in front of echo-a
	// and echo-b.
	echo *corev1.Service
	// webhook is "tls", port 9443, in front of an HTTPS pod whose
	// certificate names tls.<namespace>.svc.
	webhook *corev1.Service
	caPool  *x509.CertPool
}

// startServiceBackends creates the backend pods and their Services and waits
// for the pods to run.
func startServiceBackends(t *testing.T, n *testNode, ns string) serviceBackendPods {
	t.Helper()
	ctx := context.Background()
	services := n.client.CoreV1().Services(ns)
	ca, caPool := newTestCA(t)
	certPEM, keyPEM := ca.serverCert(t, "tls."+ns+".svc")
	if _, err := n.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, port := range map[string]int32{"echo-a": 7000, "echo-b": 7001} {
		pod := backendProcessPod(t, n, ns, name, "echo")
		pod.Labels = map[string]string{"app": "echo"}
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "ECHO_PORT", Value: strconv.Itoa(int(port))})
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "echo", ContainerPort: port}}
		n.create(t, pod)
	}
	tlsPod := backendProcessPod(t, n, ns, "tls", "tls")
	tlsPod.Labels = map[string]string{"app": "tls"}
	tlsPod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "https", ContainerPort: tlsPort}}
	tlsPod.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}}
	tlsPod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}}
	n.create(t, tlsPod)

	echo := createService(t, services, "echo", map[string]string{"app": "echo"},
		corev1.ServicePort{Name: "by-number", Port: 8080, TargetPort: intstr.FromInt32(echoNumberedPort)},
		corev1.ServicePort{Name: "by-name", Port: 8081, TargetPort: intstr.FromString("echo")},
		corev1.ServicePort{Name: "peer", Port: 8084, TargetPort: intstr.FromInt32(peerPort)},
		corev1.ServicePort{Name: "udp", Port: 8080, Protocol: corev1.ProtocolUDP})
	webhook := createService(t, services, "tls", map[string]string{"app": "tls"},
		corev1.ServicePort{Name: "https", Port: 9443, TargetPort: intstr.FromString("https")})
	for _, name := range []string{"echo-a", "echo-b", "tls"} {
		n.waitPhase(t, ns, name, corev1.PodRunning)
	}
	return serviceBackendPods{echo: echo, webhook: webhook, caPool: caPool}
}

// backendProcessPod is a pod running this test binary as a backend.
func backendProcessPod(t *testing.T, n *testNode, ns, name, mode string) *corev1.Pod {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pod := n.shellPod(ns, name, "")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	pod.Spec.Containers = []corev1.Container{{
		Name:    "main",
		Image:   "paddlejob.test/backend",
		Command: []string{self},
		Env: []corev1.EnvVar{
			{Name: helperEnv, Value: "service-backend"},
			{Name: backendEnv, Value: mode},
			podIPEnvVar,
		},
	}}
	return pod
}

// checkRoundRobin checks that six connections to addr reach echo-a and
// echo-b three times each, every message coming back whole.
func checkRoundRobin(t *testing.T, nodeNet *podnetwork.Namespace, addr string) {
	t.Helper()
	// The controller manager writes the slices a moment after the pods
	// run, and they are Ready a moment before they listen: wait for both.
	waitServed(t, nodeNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-a: ") })
	waitServed(t, nodeNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-b: ") })
	seen := map[string]int{}
	for i := range 6 {
		msg := "ping " + strconv.Itoa(i)
		reply, err := testutil.ExchangeWith(nodeNet.DialContext, addr, msg)
		if err != nil {
			t.Fatal(err)
		}
		pod, got, _ := strings.Cut(reply, ": ")
		if got != msg {
			t.Fatalf("sent %q, got %q", msg, reply)
		}
		seen[pod]++
	}
	if seen["echo-a"] != 3 || seen["echo-b"] != 3 {
		t.Errorf("connections per pod %v, want 3 each", seen)
	}
}

// checkWebhookCall calls addr as the API server calls a webhook: to the
// cluster IP, verifying the name <service>.<namespace>.svc.
func checkWebhookCall(t *testing.T, nodeNet *podnetwork.Namespace, addr string, caPool *x509.CertPool, serverName string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext:       nodeNet.DialContext,
		TLSClientConfig:   &tls.Config{RootCAs: caPool, ServerName: serverName},
		DisableKeepAlives: true,
	}}
	var body string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := client.Post("https://"+addr+"/validate", "text/plain", strings.NewReader("review"))
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no HTTPS answer through %s", addr)
	}
	if want := "tls over TLS: POST /validate review"; body != want {
		t.Errorf("got %q, want %q", body, want)
	}
}

// checkNoReadyBackend creates a Service no pod serves: its listener opens,
// closes every connection, and closes once the Service is deleted.
func checkNoReadyBackend(t *testing.T, nodeNet *podnetwork.Namespace, services serviceClient) {
	t.Helper()
	ctx := context.Background()
	nobody := createService(t, services, "nobody", map[string]string{"app": "nobody"},
		corev1.ServicePort{Name: "http", Port: 8080})
	addr := hostPort(nobody.Spec.ClusterIP, 8080)
	waitUntil(t, "listener opened", func() bool { return listeningVia(nodeNet, addr) })
	start := time.Now()
	reply, err := testutil.ExchangeWith(nodeNet.DialContext, addr, "anyone?")
	if err == nil {
		t.Fatalf("got %q, want the connection closed", reply)
	}
	t.Logf("no backend: %v after %s", err, time.Since(start).Round(time.Microsecond))

	if err := services.Delete(ctx, "nobody", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "listener closed after the Service was deleted", func() bool { return !listeningVia(nodeNet, addr) })
}

// checkShutdownClosesProxy stops the node while a connection to addr is
// open: the connection ends and no listener is left open in the node's
// namespace (which the test holds on to, the node closing its own).
func checkShutdownClosesProxy(t *testing.T, nodeNet, servicesNet *podnetwork.Namespace, stopNode func(), addr string, listeners []string) {
	t.Helper()
	nodeNet = holdNamespace(t, nodeNet)
	// The listeners are asked in the services namespace, held open: from
	// the node's, once the node stopped, a cluster IP leads nowhere.
	servicesNet = holdNamespace(t, servicesNet)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := nodeNet.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "pending"); err != nil {
		t.Fatal(err)
	}
	stopNode()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reading an open connection after the node stopped: %v", err)
	}
	for _, l := range listeners {
		if listeningVia(servicesNet, l) {
			t.Errorf("%s still listens after the node stopped", l)
		}
	}
}

// holdNamespace returns a Namespace of the test's own on ns's namespace, open
// until the test ends.
func holdNamespace(t *testing.T, ns *podnetwork.Namespace) *podnetwork.Namespace {
	t.Helper()
	type result struct {
		held *podnetwork.Namespace
		err  error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		restore, err := ns.EnterLocked()
		if err != nil {
			res <- result{err: err}
			return // the thread dies with the goroutine
		}
		held, err := podnetwork.Current()
		if rerr := restore(); rerr != nil {
			res <- result{err: errors.Join(err, rerr)}
			return
		}
		runtime.UnlockOSThread()
		res <- result{held: held, err: err}
	}()
	r := <-res
	if r.err != nil {
		t.Fatalf("holding the node's network namespace: %v", r.err)
	}
	t.Cleanup(func() { _ = r.held.Close() })
	return r.held
}
