package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

const (
	operatorNamespace = "paddlejob-system"
	leaseName         = "paddlejob-operator.batch.paddlepaddle.org"
)

// renderDefault renders config/default as a user would (kustomize).
func renderDefault(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command(kustomizeBinary(t), "build", filepath.Join(testenv.RepoRoot(), "config", "default")).Output()
	if err != nil {
		t.Fatalf("rendering config/default: %v", err)
	}
	objs, err := kube.DecodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// kustomizeBinary is the project's kustomize (make bin/kustomize builds it
// from Go modules), else kubectl's built-in one.
func kustomizeBinary(t testing.TB) string {
	t.Helper()
	if p := filepath.Join(testenv.RepoRoot(), "bin", "kustomize"); fileExists(p) {
		return p
	}
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "kustomize"), "sigs.k8s.io/kustomize/kustomize/v5")
	build.Dir = filepath.Join(testenv.RepoRoot(), "hack", "tools")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kustomize from hack/tools: %v\n%s", err, out)
	}
	return filepath.Join(binDir, "kustomize")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// On a cluster without the operator, the rendered config/default installs
// it — a Deployment with its RBAC, run by the process node — and it runs a
// job. Both replicas serve the certificate the operator issued into the
// Secret they mount, which the webhook configurations trust. Two replicas elect a leader; killing the leader mid-job leaves the
// job to the other, which completes it without duplicate pods. The metrics
// endpoint serves the job metrics, to authorized scrapers only. (How long
// the failover takes is BenchmarkLeaderFailover's.)
func TestInstalledOperatorWithTwoReplicasSurvivesItsLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, dial := installTwoReplicas(t)
	leader := waitLeader(t, c, "")
	t.Logf("leader: %s", leader)
	waitReplicasReady(t, c, dial, 2)
	checkReplicasServeTheSecretsCertificate(t, c, dial)

	// A job through the installed operator (and its webhook, behind its Service).
	ns := "default"
	job := testutil.MakePaddleJob("ha", ns).Workers(2).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", "sleep 15").Obj()
	if _, err := c.Create(ctx, job); err != nil {
		t.Fatalf("creating a job through the installed operator: %v", err)
	}
	if _, err := c.WaitFor(ctx, ns, "ha", client.Running, jobTimeout); err != nil {
		t.Fatal(err)
	}
	before, err := c.Pods(ctx, ns, "ha")
	if err != nil {
		t.Fatal(err)
	}

	next, took := killLeader(t, c, leader)
	t.Logf("killed the leader %s; %s took over after %s (lease duration 15s)", leader, next, took.Round(100*time.Millisecond))

	done, err := c.WaitFor(ctx, ns, "ha", client.Finished, jobTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status.Phase != paddlev1.PaddleJobCompleted {
		t.Fatalf("the job %s: %s", done.Status.Phase, client.FailureMessage(done))
	}
	after, err := c.Pods(ctx, ns, "ha")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || after[0].UID != before[0].UID || after[1].UID != before[1].UID {
		t.Errorf("pods before the failover %d, after %d (or recreated)", len(before), len(after))
	}

	// The metrics endpoint of the current leader serves the job metrics.
	metrics := scrape(t, c, dial, strings.SplitN(next, "_", 2)[0])
	for _, m := range []string{`paddlejob_jobs{mode="Collective",phase="Completed"} 1`, "paddlejob_job_duration_seconds_count", "controller_runtime_reconcile_total"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("metrics lack %s", m)
		}
	}
}

// How long the installed operator's second replica takes to lead once the
// leader is killed (SIGKILL: the lease is not released, it must expire):
//
//	go test ./test/e2e -run '^$' -bench LeaderFailover -benchtime 1x
//
// (part of make bench; results in docs/benchmarks.md).
func BenchmarkLeaderFailover(b *testing.B) {
	c, dial := installTwoReplicas(b)
	var total time.Duration
	for b.Loop() {
		leader := waitLeader(b, c, "")
		waitReplicasReady(b, c, dial, 2)
		_, took := killLeader(b, c, leader)
		total += took
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-new-leader")
}

// installTwoReplicas starts a local cluster without the operator (stopped
// when the test ends) and installs the operator there from config/default,
// as a user would, with two replicas. It returns a client of that cluster.
func installTwoReplicas(t testing.TB) (*client.Client, dialFunc) {
	t.Helper()
	ctx := context.Background()
	installOpts := localcluster.Options{
		Home:       filepath.Join(t.TempDir(), "home"),
		Executable: filepath.Join(binDir, "paddlejob"),
		BinaryDirs: opts.BinaryDirs,
		NoOperator: true,
		HostPathRO: opts.HostPathRO,
		HostPathRW: opts.HostPathRW,
		Out:        io.Discard,
	}
	st, err := upCluster(ctx, installOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := downCluster(installOpts); err != nil {
			t.Errorf("stopping the second cluster: %v", err)
		}
	})
	c, err := client.NewFromKubeconfig(st.Kubeconfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	applier, err := kube.NewApplier(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range renderDefault(t) {
		if o.GetKind() == "Deployment" {
			if err := unstructured.SetNestedField(o.Object, int64(2), "spec", "replicas"); err != nil {
				t.Fatal(err)
			}
		}
		if err := applier.Apply(ctx, o, ""); err != nil {
			t.Fatal(err)
		}
	}
	return c, egressDialer(st)
}

// killLeader kills the leading replica's process and waits until another
// leads; it returns that one and how long it took.
func killLeader(t testing.TB, c *client.Client, leader string) (string, time.Duration) {
	t.Helper()
	pid := operatorPID(t, strings.SplitN(leader, "_", 2)[0])
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	next := waitLeader(t, c, leader)
	return next, time.Since(killed)
}

// waitLeader waits for the leader election lease to name a holder other
// than not, and returns it.
func waitLeader(t testing.TB, c *client.Client, not string) string {
	t.Helper()
	var holder string
	poll(t, 2*time.Minute, fmt.Sprintf("an operator replica other than %q to lead", not), func() (bool, string) {
		lease, err := c.Clientset().CoordinationV1().Leases(operatorNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || *lease.Spec.HolderIdentity == not || !leaseFresh(lease) {
			return false, "the lease names no other live holder"
		}
		holder = *lease.Spec.HolderIdentity
		return true, holder
	})
	return holder
}

// waitReplicasReady waits until n operator pods are Ready — what `kubectl
// rollout status` waits for: the node runs their readiness probe, which
// passes once the webhook serves and the webhook configurations trust its
// certificate — and the webhook's Service routes to them: the API server
// calls the webhook there, and the node's proxy follows pods' readiness
// through its own watch.
func waitReplicasReady(t testing.TB, c *client.Client, dial dialFunc, n int) {
	t.Helper()
	poll(t, 2*time.Minute, fmt.Sprintf("%d operator replicas are Ready", n), func() (bool, string) {
		pods, err := c.Clientset().CoreV1().Pods(operatorNamespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=paddlejob-operator"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		return ready >= n, fmt.Sprintf("%d of %d pods Ready", ready, len(pods.Items))
	})
	poll(t, time.Minute, "the webhook's Service answers a TLS handshake", func() (bool, string) {
		svc, err := c.Clientset().CoreV1().Services(operatorNamespace).Get(context.Background(), "paddlejob-webhook-service", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		addr := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
		// The handshake is the point, not who signed the certificate (the
		// API server checks that against the webhook configuration's CA).
		conn, err := dialTLS(dial, addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // see above
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	})
}

// checkReplicasServeTheSecretsCertificate checks that the operator issued
// its webhook certificate into the Secret paddlejob-webhook-certs, that both
// webhook configurations trust its CA, and that every operator pod serves
// it, for the webhook Service's name.
func checkReplicasServeTheSecretsCertificate(t *testing.T, c *client.Client, dial dialFunc) {
	t.Helper()
	ctx := context.Background()
	cs := c.Clientset()
	secret, err := cs.CoreV1().Secrets(operatorNamespace).Get(ctx, "paddlejob-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca := secret.Data["ca.crt"]
	block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
	if len(ca) == 0 || block == nil {
		t.Fatalf("the Secret paddlejob-webhook-certs holds no CA or certificate (keys %v)", slices.Collect(maps.Keys(secret.Data)))
	}
	v, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "paddlejob-validating-webhook-configuration", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "paddlejob-mutating-webhook-configuration", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, ca) || !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, ca) {
		t.Error("the webhook configurations do not trust the Secret's CA")
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	pods, err := cs.CoreV1().Pods(operatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=paddlejob-operator"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		addr := net.JoinHostPort(p.Status.PodIP, "9443")
		conn, err := dialTLS(dial, addr, &tls.Config{RootCAs: roots, ServerName: "paddlejob-webhook-service." + operatorNamespace + ".svc"})
		if err != nil {
			t.Errorf("pod %s's webhook: %v", p.Name, err)
			continue
		}
		if !bytes.Equal(conn.ConnectionState().PeerCertificates[0].Raw, block.Bytes) {
			t.Errorf("pod %s serves another certificate than the Secret's", p.Name)
		}
		conn.Close()
	}
}

func leaseFresh(l *coordinationv1.Lease) bool {
	return l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) < 15*time.Second
}

// operatorPID finds the operator process of a pod on the local node.
func operatorPID(t testing.TB, pod string) int {
	t.Helper()
	pid := findPodProcess(pod, func(args []string) bool { return strings.Contains(strings.Join(args, "\x00"), "paddlejob\x00operator") })
	if pid == 0 {
		t.Fatalf("no operator process for pod %s", pod)
	}
	return pid
}

// scrape reads an operator pod's metrics endpoint as a scraper bound to
// paddlejob-metrics-reader, after checking that it refuses an anonymous
// request and a ServiceAccount without that role.
func scrape(t *testing.T, c *client.Client, dial dialFunc, pod string) string {
	t.Helper()
	ctx := context.Background()
	p, err := c.Clientset().CoreV1().Pods(operatorNamespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Fatalf("pod %s is %s", pod, p.Status.Phase)
	}
	url := fmt.Sprintf("https://%s:8080/metrics", p.Status.PodIP)
	get := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The endpoint's certificate is self-signed, as Prometheus' ServiceMonitor expects.
		hc := &http.Client{Transport: &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("an anonymous scrape got %d, want 401", code)
	}
	if code, _ := get(serviceAccountToken(t, c, "metrics-nobody", false)); code != http.StatusForbidden {
		t.Errorf("a ServiceAccount without paddlejob-metrics-reader got %d, want 403", code)
	}
	code, body := get(serviceAccountToken(t, c, "metrics-scraper", true))
	if code != http.StatusOK {
		t.Fatalf("a scraper bound to paddlejob-metrics-reader got %d: %s", code, body)
	}
	return body
}

// serviceAccountToken is a token of a new ServiceAccount of the operator's
// namespace, bound to the ClusterRole paddlejob-metrics-reader if reader.
func serviceAccountToken(t *testing.T, c *client.Client, name string, reader bool) string {
	t.Helper()
	ctx := context.Background()
	cs := c.Clientset()
	if _, err := cs.CoreV1().ServiceAccounts(operatorNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if reader {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "paddlejob-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: operatorNamespace}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
