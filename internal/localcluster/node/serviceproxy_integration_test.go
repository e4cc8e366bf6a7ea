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
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// backendEnv is the kind of Service backend serveBackend is.
const backendEnv = "NODE_TEST_SERVICE_BACKEND"

// Ports the backend pods listen on, at their pod IP.
const (
	echoPort = 7000
	tlsPort  = 8443
)

// serveBackend is the program of TestServiceProxy's backend pods, which run
// this test binary as the "service-backend" helper (see runHelper) with
// backendEnv set; it serves until killed. "echo" answers each connection,
// once the client has half-closed it, with "<hostname>: <what the client
// sent>"; "tls" serves HTTPS with the certificate in /tls.
func serveBackend(mode string) int {
	host, _ := os.Hostname()
	ip := os.Getenv("POD_IP")
	switch mode {
	case "echo":
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(echoPort)))
		if err != nil {
			fmt.Println("listen error:", err)
			return 1
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				fmt.Println("accept error:", err)
				return 1
			}
			go func() {
				defer c.Close()
				data, _ := io.ReadAll(c)
				fmt.Fprintf(c, "%s: %s", host, data)
			}()
		}
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

// serviceTestCluster starts an API server of its own whose Services get
// loopback cluster IPs (the shared one hands out 10.0.0.0/24), in a random
// /16 of 127.128.0.0/9 so that test runs at once, and a local cluster's
// 127.64.0.0/16, do not clash.
func serviceTestCluster(t *testing.T) (*rest.Config, string) {
	t.Helper()
	requireBwrap(t)
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		os.Setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "120s")
	}
	dir, err := kubebin.Ensure(context.Background(), kubebin.Options{
		Dirs: []string{os.Getenv("KUBEBUILDER_ASSETS"), os.Getenv("PADDLEJOB_BINARIES")},
		Log:  os.Stderr,
	}, kubebin.EnvtestComponents...)
	if err != nil {
		t.Fatal(err)
	}
	cidr := fmt.Sprintf("127.%d.0.0/16", 128+mathrand.IntN(127))
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", cidr)
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg, cidr
}

// TestServiceProxy runs the node with Services whose cluster IPs are
// loopback addresses: the test process reaches pods through them as the API
// server reaches a webhook.
func TestServiceProxy(t *testing.T) {
	t.Parallel()
	started := time.Now()
	cfg, cidr := serviceTestCluster(t)
	t.Logf("API server with service range %s up in %s", cidr, time.Since(started).Round(time.Millisecond))
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
	ns := n.namespace(t)
	ctx := context.Background()
	services := n.client.CoreV1().Services(ns)
	b := startServiceBackends(t, n, ns)
	byNumber := net.JoinHostPort(b.echo.Spec.ClusterIP, "8080")
	byName := net.JoinHostPort(b.echo.Spec.ClusterIP, "8081")
	webhookAddr := net.JoinHostPort(b.webhook.Spec.ClusterIP, "9443")

	t.Run("round trip and round robin", func(t *testing.T) { checkRoundRobin(t, byNumber) })

	t.Run("target port by name", func(t *testing.T) {
		reply, err := testutil.Exchange(byName, "named")
		if err != nil || !strings.HasSuffix(reply, ": named") {
			t.Fatalf("got %q, %v", reply, err)
		}
	})

	t.Run("large transfer both ways", func(t *testing.T) {
		payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		reply, err := testutil.Exchange(byNumber, string(payload))
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(reply, ": ")
		if body != string(payload) {
			t.Fatalf("got %d bytes back, want %d", len(body), len(payload))
		}
	})

	t.Run("TLS through the proxy", func(t *testing.T) {
		checkWebhookCall(t, webhookAddr, b.caPool, "tls."+ns+".svc")
	})

	t.Run("a terminating pod gets no connections", func(t *testing.T) {
		if err := n.client.CoreV1().Pods(ns).Delete(ctx, "echo-b", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitServed(t, byNumber, func(string) bool {
			for range 4 {
				if reply, err := testutil.Exchange(byNumber, "x"); err != nil || reply != "echo-a: x" {
					return false
				}
			}
			return true
		})
	})

	t.Run("no ready backend", func(t *testing.T) { checkNoReadyBackend(t, services) })

	t.Run("node shutdown closes listeners and connections", func(t *testing.T) {
		checkShutdownClosesProxy(t, stopNode, byNumber, []string{byNumber, byName, webhookAddr})
	})
}

// serviceBackendPods are TestServiceProxy's Services and what a client of
// the TLS one trusts.
type serviceBackendPods struct {
	// echo has ports 8080 (target by number), 8081 (by name) and a UDP
	// port the proxy leaves alone, in front of echo-a and echo-b.
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
	for _, name := range []string{"echo-a", "echo-b"} {
		pod := backendProcessPod(t, n, ns, name, "echo")
		pod.Labels = map[string]string{"app": "echo"}
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "echo", ContainerPort: echoPort}}
		n.create(t, pod)
	}
	tlsPod := backendProcessPod(t, n, ns, "tls", "tls")
	tlsPod.Labels = map[string]string{"app": "tls"}
	tlsPod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "https", ContainerPort: tlsPort}}
	tlsPod.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}}
	tlsPod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}}
	n.create(t, tlsPod)

	echo := createService(t, services, "echo", map[string]string{"app": "echo"},
		corev1.ServicePort{Name: "by-number", Port: 8080, TargetPort: intstr.FromInt32(echoPort)},
		corev1.ServicePort{Name: "by-name", Port: 8081, TargetPort: intstr.FromString("echo")},
		corev1.ServicePort{Name: "udp", Port: 8080, Protocol: corev1.ProtocolUDP})
	webhook := createService(t, services, "tls", map[string]string{"app": "tls"},
		corev1.ServicePort{Name: "https", Port: 9443, TargetPort: intstr.FromString("https")})
	if !strings.HasPrefix(echo.Spec.ClusterIP, "127.") {
		t.Fatalf("cluster IP %s is not a loopback address", echo.Spec.ClusterIP)
	}
	for _, name := range []string{"echo-a", "echo-b", "tls"} {
		n.waitPhase(t, ns, name, corev1.PodRunning)
	}
	return serviceBackendPods{echo: echo, webhook: webhook, caPool: caPool}
}

// checkRoundRobin checks that six connections to addr reach echo-a and
// echo-b three times each, every message coming back whole.
func checkRoundRobin(t *testing.T, addr string) {
	t.Helper()
	// The pods are Ready as soon as they run, a moment before they
	// listen (probes are not run): wait for both to answer.
	waitServed(t, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-a: ") })
	waitServed(t, addr, func(reply string) bool { return strings.HasPrefix(reply, "echo-b: ") })
	seen := map[string]int{}
	for i := range 6 {
		msg := "ping " + strconv.Itoa(i)
		reply, err := testutil.Exchange(addr, msg)
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
func checkWebhookCall(t *testing.T, addr string, caPool *x509.CertPool, serverName string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
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
func checkNoReadyBackend(t *testing.T, services serviceClient) {
	t.Helper()
	ctx := context.Background()
	createService(t, services, "nobody", map[string]string{"app": "nobody"},
		corev1.ServicePort{Name: "http", Port: 8080})
	nobody, err := services.Get(ctx, "nobody", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(nobody.Spec.ClusterIP, "8080")
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: not within 10s", what)
		}
	}
	waitFor("listener opened", func() bool { return testutil.Listening(addr) })
	start := time.Now()
	reply, err := testutil.Exchange(addr, "anyone?")
	if err == nil {
		t.Fatalf("got %q, want the connection closed", reply)
	}
	t.Logf("no backend: %v after %s", err, time.Since(start).Round(time.Microsecond))

	if err := services.Delete(ctx, "nobody", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("listener closed after the Service was deleted", func() bool { return !testutil.Listening(addr) })
}

// checkShutdownClosesProxy stops the node while a connection to addr is
// open: the connection ends and no listener is left open.
func checkShutdownClosesProxy(t *testing.T, stopNode func(), addr string, listeners []string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
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
		if testutil.Listening(l) {
			t.Errorf("%s still listens after the node stopped", l)
		}
	}
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

// serviceClient is the part of a namespace's Services client the tests use.
type serviceClient interface {
	Create(context.Context, *corev1.Service, metav1.CreateOptions) (*corev1.Service, error)
	Get(context.Context, string, metav1.GetOptions) (*corev1.Service, error)
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

// waitServed exchanges a message with addr until ok accepts the reply.
func waitServed(t *testing.T, addr string, ok func(reply string) bool) {
	t.Helper()
	var last string
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		last, lastErr = testutil.Exchange(addr, "hello")
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
