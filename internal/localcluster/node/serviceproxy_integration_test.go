//go:build integration

package node

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
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
		// echo-a names 7000 "echo", echo-b 7001: only a named target port
		// resolved per pod reaches both.
		waitServed(t, nodeNet, byName, func(reply string) bool { return strings.HasPrefix(reply, "echo-a 7000: ") })
		waitServed(t, nodeNet, byName, func(reply string) bool { return strings.HasPrefix(reply, "echo-b 7001: ") })
		slices, err := n.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=echo"})
		if err != nil {
			t.Fatal(err)
		}
		if len(slices.Items) != 2 {
			t.Errorf("%d EndpointSlices of echo, want 2 (one per port numbering)", len(slices.Items))
		}
	})

	t.Run("a pod reaches a Service by its cluster IP; the backend sees the pods' gateway as the client", func(t *testing.T) {
		client := n.shellPod(ns, "client", "")
		client.Spec.Containers = []corev1.Container{
			helperContainer(t, "exchange", "exchange", byNumber, "from a pod"),
			helperContainer(t, "peer", "exchange", peer, ""),
		}
		n.create(t, client)
		n.waitPhase(t, ns, "client", corev1.PodSucceeded)
		if got := strings.TrimSpace(n.logs(t, ns, "client", "exchange", "")); got != "echo-a: from a pod" && got != "echo-b: from a pod" {
			t.Errorf("the pod got %q, want echo-a or echo-b answering", got)
		}
		if got := strings.TrimSpace(n.logs(t, ns, "client", "peer", "")); got != "10.244.0.1" {
			t.Errorf("the backend saw the client as %q, want the pods' gateway 10.244.0.1", got)
		}
	})

	t.Run("large transfer both ways", func(t *testing.T) {
		payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		reply, err := exchangeVia(nodeNet, byNumber, string(payload))
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
		checkShutdownClosesProxy(t, nodeNet, stopNode, webhookAddr, []string{byNumber, byName, webhookAddr})
	})
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
	cfg := serviceTestCluster(t)
	testNet := newServiceNetwork(t, backendA.ip, backendB.ip)
	client := kubernetes.NewForConfigOrDie(cfg)
	startProxy(t, client, testNet)
	ctx := context.Background()
	ns := "conditions"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := client.CoreV1().Pods(ns)
	services := client.CoreV1().Services(ns)
	for _, b := range []testBackend{backendA, backendB} {
		serveEcho(t, testNet, b.ip, b.port, b.pod)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "backend-host"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []testBackend{backendA, backendB} {
		createStatusOnlyPod(t, client, ns, b)
	}
	echo := createService(t, services, "echo", map[string]string{"app": "echo"},
		corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromString("echo")})
	addr := hostPort(echo.Spec.ClusterIP, 8080)
	waitServed(t, testNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-a: ") })
	waitServed(t, testNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-b: ") })

	t.Run("readiness: an unready pod gets no connections until Ready again", func(t *testing.T) {
		setPodReady(t, client, ns, "echo-b", false)
		waitOnlyServes(t, testNet, addr, "echo-a")
		setPodReady(t, client, ns, "echo-b", true)
		waitServed(t, testNet, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-b: ") })
	})

	t.Run("selectorless Service with a hand-made EndpointSlice", func(t *testing.T) {
		s := createService(t, services, "by-hand", nil, corev1.ServicePort{Name: "http", Port: 8082})
		if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "by-hand-1", Labels: map[string]string{discoveryv1.LabelServiceName: "by-hand"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(backendA.port)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{backendA.ip}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitOnlyServes(t, testNet, hostPort(s.Spec.ClusterIP, 8082), "echo-a")
	})

	t.Run("selectorless Service with hand-made Endpoints, mirrored into a slice", func(t *testing.T) {
		s := createService(t, services, "mirrored", nil, corev1.ServicePort{Name: "http", Port: 8083})
		if _, err := client.CoreV1().Endpoints(ns).Create(ctx, &corev1.Endpoints{ //nolint:staticcheck // the mirroring controller's input
			ObjectMeta: metav1.ObjectMeta{Name: "mirrored"},
			Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
				Addresses: []corev1.EndpointAddress{{IP: backendB.ip}},
				Ports:     []corev1.EndpointPort{{Name: "http", Port: backendB.port}}, //nolint:staticcheck // as above
			}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitOnlyServes(t, testNet, hostPort(s.Spec.ClusterIP, 8083), "echo-b")
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
			_, err := exchangeVia(testNet, addr, "x")
			return err != nil
		})
	})
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

// startProxy runs a Service proxy in nodeNet, fed as the node feeds its
// own (node.go), until the test ends.
func startProxy(t *testing.T, client kubernetes.Interface, nodeNet *podnetwork.Namespace) {
	t.Helper()
	cidrs, err := serviceproxy.ParseCIDRs(serviceproxy.DefaultCIDR)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	serviceInformer := factory.Core().V1().Services()
	sliceInformer := factory.Discovery().V1().EndpointSlices()
	proxy := serviceproxy.New(serviceproxy.Config{
		Log:            logr.Discard(),
		Services:       serviceInformer.Lister(),
		EndpointSlices: sliceInformer.Lister(),
		Synced:         func() bool { return serviceInformer.Informer().HasSynced() && sliceInformer.Informer().HasSynced() },
		Eligible:       cidrs.Contains,
		Network:        nodeNet,
	})
	if _, err := serviceInformer.Informer().AddEventHandler(proxy.Handler()); err != nil {
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

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

// serviceTestCluster starts an API server of its own whose Services get
// cluster IPs of the node's default service range (the shared one hands
// out 10.0.0.0/24), and a controller manager running only the endpoint
// controllers the node's proxy reads.
func serviceTestCluster(t *testing.T) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		os.Setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "120s")
	}
	dir, err := kubebin.Ensure(context.Background(), kubebin.Options{
		Dirs: []string{os.Getenv("KUBEBUILDER_ASSETS"), os.Getenv("PADDLEJOB_BINARIES")},
		Log:  os.Stderr,
	}, kubebin.Etcd, kubebin.KubeAPIServer, kubebin.KubeControllerManager)
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", serviceproxy.DefaultCIDR)
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	startEndpointControllers(t, cfg, filepath.Join(dir, kubebin.KubeControllerManager))
	return cfg
}

// startEndpointControllers runs kube-controller-manager with the
// EndpointSlice and EndpointSlice mirroring controllers until the test ends.
func startEndpointControllers(t *testing.T, cfg *rest.Config, binary string) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "kube-controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--kubeconfig="+kubeconfig,
		"--controllers=endpointslice-controller,endpointslice-mirroring-controller",
		"--leader-elect=false", "--secure-port=0", "--v=2")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logPath)
			t.Errorf("kube-controller-manager exited during the test: %v\n%s", err, log)
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
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

// serveEcho serves on ip:port in the namespace nodeNet until the test
// ends, answering each connection, once the client has half-closed it,
// with "<name>: <what the client sent>".
func serveEcho(t *testing.T, nodeNet *podnetwork.Namespace, ip string, port int32, name string) {
	t.Helper()
	ln, err := nodeNet.Listen("tcp", hostPort(ip, int(port)))
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

// exchangeWith dials addr with dial, sends msg, half-closes, and returns
// the reply.
func exchangeWith(dial func(ctx context.Context, network, addr string) (net.Conn, error), addr, msg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(c)
	return string(reply), err
}

// exchangeVia is exchangeWith from the namespace nodeNet.
func exchangeVia(nodeNet *podnetwork.Namespace, addr, msg string) (string, error) {
	return exchangeWith(nodeNet.DialContext, addr, msg)
}

// listeningVia reports whether something listens at addr in the namespace
// nodeNet: a connection is not refused (the proxy may reset one it has no
// backend for before the dial returns).
func listeningVia(nodeNet *podnetwork.Namespace, addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := nodeNet.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return true
	}
	return !errors.Is(err, syscall.ECONNREFUSED)
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
		reply, err := exchangeVia(nodeNet, addr, msg)
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

// waitOnlyServes waits until four connections in a row to addr are
// answered by who.
func waitOnlyServes(t *testing.T, nodeNet *podnetwork.Namespace, addr, who string) {
	t.Helper()
	waitServed(t, nodeNet, addr, func(string) bool {
		for range 4 {
			if reply, err := exchangeVia(nodeNet, addr, "x"); err != nil || reply != who+": x" {
				return false
			}
		}
		return true
	})
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
	reply, err := exchangeVia(nodeNet, addr, "anyone?")
	if err == nil {
		t.Fatalf("got %q, want the connection closed", reply)
	}
	t.Logf("no backend: %v after %s", err, time.Since(start).Round(time.Microsecond))

	if err := services.Delete(ctx, "nobody", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "listener closed after the Service was deleted", func() bool { return !listeningVia(nodeNet, addr) })
}

// waitUntil polls cond, failing the test after 20s with what.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("%s: not within 20s", what)
	}
}

// checkShutdownClosesProxy stops the node while a connection to addr is
// open: the connection ends and no listener is left open in the node's
// namespace (which the test holds on to, the node closing its own).
func checkShutdownClosesProxy(t *testing.T, nodeNet *podnetwork.Namespace, stopNode func(), addr string, listeners []string) {
	t.Helper()
	nodeNet = holdNamespace(t, nodeNet)
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
		if listeningVia(nodeNet, l) {
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

// serviceClient is the part of a namespace's Services client the tests use.
type serviceClient interface {
	Create(context.Context, *corev1.Service, metav1.CreateOptions) (*corev1.Service, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

func createService(t *testing.T, services serviceClient, name string, selector map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	t.Helper()
	s, err := services.Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Selector: selector, Ports: ports},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Service %s: %v", name, err)
	}
	return s
}

// waitServed exchanges a message with addr in the namespace nodeNet until
// ok accepts the reply.
func waitServed(t *testing.T, nodeNet *podnetwork.Namespace, addr string, ok func(reply string) bool) {
	t.Helper()
	var last string
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		last, lastErr = exchangeVia(nodeNet, addr, "hello")
		return lastErr == nil && ok(last), nil
	})
	if err != nil {
		t.Fatalf("%s: no good answer within 20s; last %q, %v", addr, last, lastErr)
	}
}

// testCA signs serving certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) (*testCA, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "service-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key}, pool
}

// serverCert returns a certificate for dnsName and its key, PEM-encoded.
func (ca *testCA) serverCert(t *testing.T, dnsName string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
