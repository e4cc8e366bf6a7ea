//go:build integration

package node

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
)

// The integration tests run the node against a real kube-apiserver and etcd
// (no scheduler: pods are created with spec.nodeName set), started once for
// the package by cluster().

var (
	clusterOnce sync.Once
	clusterEnv  *envtest.Environment
	clusterCfg  *rest.Config
	clusterErr  error
)

func TestMain(m *testing.M) {
	// Pods of some tests run this test binary as a helper program.
	if helper := os.Getenv(helperEnv); helper != "" {
		os.Exit(runHelper(helper, os.Args[1:]))
	}
	code := m.Run()
	if shared != nil {
		shared.stop()
		<-shared.stopped
		shared.removeState()
	}
	if clusterEnv != nil {
		_ = clusterEnv.Stop()
	}
	os.Exit(code)
}

// requireBwrap fails a test that runs pods when bubblewrap is absent: the
// integration tier is asked for explicitly (-tags integration), so a missing
// bwrap is a broken setup (hack/setup.sh installs it), not a reason to pass.
func requireBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap is not installed: run hack/setup.sh, or install the Debian package bubblewrap (apt-get install bubblewrap)")
	}
}

// cluster returns the shared API server, starting it on first use.
func cluster(t testing.TB) *rest.Config {
	t.Helper()
	requireBwrap(t)
	clusterOnce.Do(func() {
		if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
			os.Setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "120s")
		}
		dir, err := kubebin.Ensure(context.Background(), kubebin.Options{
			Dirs: []string{os.Getenv("KUBEBUILDER_ASSETS"), os.Getenv("PADDLEJOB_BINARIES")},
			Log:  os.Stderr,
		}, kubebin.EnvtestComponents...)
		if err != nil {
			clusterErr = err
			return
		}
		clusterEnv = &envtest.Environment{BinaryAssetsDirectory: dir}
		clusterCfg, clusterErr = clusterEnv.Start()
	})
	if clusterErr != nil {
		t.Fatalf("starting the API server: %v", clusterErr)
	}
	return clusterCfg
}

// testNode is a node running for a test.
type testNode struct {
	*Node
	name     string
	client   kubernetes.Interface
	stateDir string
	http     *http.Client
	stop     context.CancelFunc
	stopped  chan error
}

var (
	sharedOnce sync.Once
	shared     *testNode
)

// sharedNode is the node most tests use, each in a namespace of its own.
func sharedNode(t testing.TB) *testNode {
	t.Helper()
	cfg := cluster(t)
	sharedOnce.Do(func() { shared = newTestNode(t, cfg, "shared-node", true) })
	if shared == nil {
		t.Fatal("the shared node did not start")
	}
	return shared
}

// startNode runs a node for one test, its Config changed by configure.
func startNode(t testing.TB, cfg *rest.Config, name string, withClientCA bool, configure ...func(*Config)) *testNode {
	t.Helper()
	n := newTestNode(t, cfg, name, withClientCA, configure...)
	t.Cleanup(func() {
		n.stop()
		<-n.stopped
		n.removeState()
	})
	return n
}

// removeState deletes the node's files, unless NODE_TEST_LOG keeps them for
// a look at its log.
func (n *testNode) removeState() {
	if os.Getenv("NODE_TEST_LOG") == "" {
		_ = os.RemoveAll(n.stateDir)
	}
}

// newTestNode runs a node until stopped. withClientCA makes its kubelet API
// require a client certificate.
func newTestNode(t testing.TB, cfg *rest.Config, name string, withClientCA bool, configure ...func(*Config)) *testNode {
	t.Helper()
	stateDir, err := os.MkdirTemp("", "paddlejob-node-test-")
	if err != nil {
		t.Fatal(err)
	}
	tableFile := filepath.Join(stateDir, "images.yaml")
	table := "images:\n  example.com/sleeper:v1:\n    command: [\"sleep\"]\n    args: [\"1000\"]\n" + writeLocalImages(t, stateDir)
	if err := os.WriteFile(tableFile, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	nodeCfg := Config{
		RESTConfig:          cfg,
		NodeName:            name,
		StateDir:            filepath.Join(stateDir, "state"),
		KubeletPort:         0,
		ImageTableFile:      tableFile,
		ShutdownGracePeriod: 2 * time.Second,
		Log:                 fileLogger(t, filepath.Join(stateDir, "node.log")),
		// Emulated GPUs, as the local cluster offers them.
		Capacity:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
		NodeLabels: map[string]string{"accelerator": "nvidia-tesla-p100"},
		// The tests' hostPath volumes are t.TempDir()s their pods write,
		// and directories of /var/tmp they read (every other host path is
		// refused).
		HostPathRW: []string{os.TempDir()},
		HostPathRO: []string{"/var/tmp"},
	}
	if withClientCA {
		caFile, clientCert := testClientCA(t, stateDir)
		nodeCfg.ClientCAFile = caFile
		httpClient.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{clientCert}
	}
	for _, f := range configure {
		f(&nodeCfg)
	}
	n, err := New(nodeCfg)
	if err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn := &testNode{Node: n, name: name, client: kubernetes.NewForConfigOrDie(cfg), stateDir: stateDir, http: httpClient, stop: cancel, stopped: make(chan error, 1)}
	go func() { tn.stopped <- n.Run(ctx) }()
	select {
	case <-n.Ready():
	case err := <-tn.stopped:
		t.Fatalf("node %s stopped: %v", name, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s not ready after 30s", name)
	}
	return tn
}

// fileLogger logs to a file: a node outlives the test that started it, and
// NODE_TEST_LOG=1 prints the file's path.
func fileLogger(t testing.TB, path string) logr.Logger {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("NODE_TEST_LOG") != "" {
		fmt.Fprintln(os.Stderr, "node log:", path)
	}
	var mu sync.Mutex
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(f, time.Now().Format(time.StampMicro), prefix, args)
	}, funcr.Options{Verbosity: 4})
}

// testClientCA writes a CA and returns its file and a client certificate it
// signed.
func testClientCA(t testing.TB, dir string) (string, tls.Certificate) {
	t.Helper()
	caKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	clientKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	clientTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, caCert, &clientKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{clientDER}, PrivateKey: clientKey}
}

// namespace creates a namespace for one test.
func (n *testNode) namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", "=", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + fmt.Sprint(time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := n.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// shellPod is a pod of one busybox container running script, bound to n.
func (n *testNode) shellPod(ns, name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                      n.name,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers:                    []corev1.Container{shellContainer("main", script)},
		},
	}
}

// podIPEnvVar gives a container its pod's IP as POD_IP, from the status.
var podIPEnvVar = corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}

func shellContainer(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox:1.36", Command: []string{"sh", "-c", script}}
}

func (n *testNode) create(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := n.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

// waitPod waits until cond holds for the pod, failing the test after timeout.
func (n *testNode) waitPod(t testing.TB, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := n.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %s not reached within %s; last status: %s", ns, name, what, timeout, describeStatus(last))
	}
	return last
}

func (n *testNode) waitPhase(t testing.TB, ns, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	return n.waitPod(t, ns, name, 30*time.Second, "phase "+string(phase), func(p *corev1.Pod) bool { return p.Status.Phase == phase })
}

func describeStatus(p *corev1.Pod) string {
	if p == nil {
		return "<no pod>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s reason=%q", p.Status.Phase, p.Status.Reason)
	for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, " [%s restarts=%d", s.Name, s.RestartCount)
		switch {
		case s.State.Waiting != nil:
			fmt.Fprintf(&b, " waiting %s: %s", s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.State.Running != nil:
			b.WriteString(" running")
		case s.State.Terminated != nil:
			fmt.Fprintf(&b, " terminated %s exit=%d: %s", s.State.Terminated.Reason, s.State.Terminated.ExitCode, s.State.Terminated.Message)
		}
		b.WriteString("]")
	}
	return b.String()
}

// logs fetches a container's log from the node's kubelet API.
func (n *testNode) logs(t testing.TB, ns, pod, container, query string) string {
	t.Helper()
	resp, err := n.logsRequest(context.Background(), ns, pod, container, query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET logs of %s/%s/%s?%s: %s: %s", ns, pod, container, query, resp.Status, body)
	}
	return string(body)
}

func (n *testNode) logsRequest(ctx context.Context, ns, pod, container, query string) (*http.Response, error) {
	url := fmt.Sprintf("https://%s/containerLogs/%s/%s/%s?%s", n.KubeletAddress(), ns, pod, container, query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return n.http.Do(req)
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

// podsHostDir is a host directory of the test's for pods to read and write
// through a hostPath: 0777, as one gives a directory to pods of any uid (a
// root node's run as unprivileged host users, its writable host paths
// idmapped, where the test's own root-owned 0700 directory is nobody's
// they may enter).
func podsHostDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
