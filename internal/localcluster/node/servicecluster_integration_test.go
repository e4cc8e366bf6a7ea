//go:build integration

package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// What the Service proxy's integration tests share: their API server and
// controller manager, clients that dial in a network namespace, waits, and
// a CA for the TLS backend.

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

// waitUntil polls cond, failing the test after 20s with what.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("%s: not within 20s", what)
	}
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
		last, lastErr = testutil.ExchangeWith(nodeNet.DialContext, addr, "hello")
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
