//go:build integration

package launcher

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

func TestDiscoveryAssignsTrainerIDs(t *testing.T) {
	env, cs := apiServer(t)
	ns := newNamespace(t, cs)
	createJob(t, cs, ns, "paddle-cluster-job", 3)
	createJobPod(t, cs, ns, "paddle-cluster-job", "paddle-cluster-job-aaaaa", "job-name", corev1.PodRunning, "10.0.0.10")
	createJobPod(t, cs, ns, "paddle-cluster-job", "paddle-cluster-job-bbbbb", "job-name", corev1.PodRunning, "10.0.0.9")
	// Newer clusters may label only with the prefixed key.
	createJobPod(t, cs, ns, "paddle-cluster-job", "paddle-cluster-job-ccccc", "batch.kubernetes.io/job-name", corev1.PodRunning, "10.0.0.11")
	// Neither a failed predecessor nor another job's pod is a peer.
	createJobPod(t, cs, ns, "paddle-cluster-job", "paddle-cluster-job-old", "job-name", corev1.PodFailed, "10.0.0.1")
	createJobPod(t, cs, ns, "other-job", "other-job-zzzzz", "job-name", corev1.PodRunning, "10.0.0.2")

	c, err := NewCluster(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	expected, err := expectedPods(ctx, c, ns, "paddle-cluster-job", 0, 0, &bytes.Buffer{})
	if err != nil || expected != 3 {
		t.Fatalf("expectedPods() = %d, %v; want the Job's parallelism 3", expected, err)
	}
	peers, err := waitForPeers(ctx, c, ns, "paddle-cluster-job", expected, 100*time.Millisecond, 30*time.Second, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	order, err := trainerOrder(peers)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := joinAddrs(order), "10.0.0.9,10.0.0.10,10.0.0.11"; got != want {
		t.Errorf("trainer order = %s, want %s", got, want)
	}
	self, err := selfAddress("paddle-cluster-job-aaaaa", peers, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := trainerID(order, self); err != nil || id != 1 {
		t.Errorf("trainer id of paddle-cluster-job-aaaaa (10.0.0.10) = %d, %v; want 1", id, err)
	}
}

func TestDiscoveryWaitsForPendingPod(t *testing.T) {
	env, cs := apiServer(t)
	ns := newNamespace(t, cs)
	createJob(t, cs, ns, "job", 2)
	createJobPod(t, cs, ns, "job", "job-a", "job-name", corev1.PodRunning, "10.1.0.1")
	createJobPod(t, cs, ns, "job", "job-b", "job-name", corev1.PodPending, "")
	c, err := NewCluster(env.Config)
	if err != nil {
		t.Fatal(err)
	}

	type result struct {
		peers []corev1.Pod
		err   error
	}
	done := make(chan result, 1)
	progress := &testutil.SyncBuffer{}
	go func() {
		peers, err := waitForPeers(context.Background(), c, ns, "job", 2, 100*time.Millisecond, time.Minute, progress)
		done <- result{peers, err}
	}()
	// notYet checks, once the wait has reported seeing the state, that the
	// wait went on: no sleep, the progress says what it saw.
	notYet := func(seen, state string) {
		t.Helper()
		if !waitForText(progress, seen) {
			t.Fatalf("progress %q never said %q", progress, seen)
		}
		select {
		case r := <-done:
			t.Fatalf("waitForPeers returned while %s: %v, %v", state, names(r.peers), r.err)
		default:
		}
	}
	notYet("waiting for: job-b (Pending)", "job-b was Pending")
	// The kubelet starts job-b; Running without an IP is not enough yet.
	setPodStatus(t, cs, getPod(t, cs, ns, "job-b"), corev1.PodRunning, "")
	notYet("waiting for: job-b (Running, no IP)", "job-b had no IP")
	setPodStatus(t, cs, getPod(t, cs, ns, "job-b"), corev1.PodRunning, "10.1.0.2")
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := names(r.peers); !reflect.DeepEqual(got, []string{"job-a", "job-b"}) {
			t.Errorf("peers = %v", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waitForPeers did not return after job-b got an IP")
	}
	log := progress.String()
	for _, want := range []string{"waiting for: job-b (Pending)", "waiting for: job-b (Running, no IP)"} {
		if !strings.Contains(log, want) {
			t.Errorf("progress %q lacks %q", log, want)
		}
	}
}

func TestDiscoveryTimeoutNamesMissingPods(t *testing.T) {
	env, cs := apiServer(t)
	ns := newNamespace(t, cs)
	createJob(t, cs, ns, "paddle-cluster-job", 3)
	createJobPod(t, cs, ns, "paddle-cluster-job", "paddle-cluster-job-r2d2q", "job-name", corev1.PodRunning, "10.2.0.1")
	createJobPod(t, cs, ns, "paddle-cluster-job", "paddle-cluster-job-x7k2p", "job-name", corev1.PodPending, "")
	c, err := NewCluster(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	_, err = waitForPeers(context.Background(), c, ns, "paddle-cluster-job", 3, 100*time.Millisecond, time.Second, &bytes.Buffer{})
	want := "timed out after 1s waiting for the pods of job " + ns + "/paddle-cluster-job: " +
		"1 of 3 pods are running with an IP; waiting for: paddle-cluster-job-x7k2p (Pending), 1 pod not created yet"
	if err == nil || err.Error() != want {
		t.Fatalf("waitForPeers() error =\n  %v\nwant\n  %s", err, want)
	}
}

// The manifest users apply must grant what the launcher does, as the
// service account the pods run as.
func TestRBACManifestGrantsDiscovery(t *testing.T) {
	env, cs := apiServer(t)
	ns := newNamespace(t, cs)
	applyRBACManifest(t, cs, ns)
	createJob(t, cs, ns, "job", 1)
	createJobPod(t, cs, ns, "job", "job-a", "job-name", corev1.PodRunning, "10.3.0.1")

	c := clusterAs(t, env, "system:serviceaccount:"+ns+":paddle-launcher", "system:serviceaccounts", "system:serviceaccounts:"+ns)
	ctx := context.Background()
	if n, err := c.JobParallelism(ctx, ns, "job"); err != nil || n != 1 {
		t.Errorf("JobParallelism() as paddle-launcher = %d, %v", n, err)
	}
	if pods, err := c.JobPods(ctx, ns, "job"); err != nil || len(pods) != 1 {
		t.Errorf("JobPods() as paddle-launcher = %v, %v", names(pods), err)
	}
	// The Role is namespaced: nothing is granted elsewhere.
	if _, err := c.JobPods(ctx, "default", "job"); err == nil {
		t.Error("paddle-launcher can list pods outside its namespace")
	}
}

// Without get on jobs the count comes from CONF_PADDLE_GRADIENT_NUM; without
// list on pods the launcher stops at once and says what to apply.
func TestDiscoveryWithLessRBAC(t *testing.T) {
	env, cs := apiServer(t)
	ns := newNamespace(t, cs)
	createJob(t, cs, ns, "job", 2)
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pods-only", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pods-only", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods-only"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "pods-only-user"}},
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	podsOnly := clusterAs(t, env, "pods-only-user")
	var log bytes.Buffer
	n, err := expectedPods(ctx, podsOnly, ns, "job", 0, 2, &log)
	if err != nil || n != 2 {
		t.Fatalf("expectedPods() = %d, %v; want the fallback 2", n, err)
	}
	if !strings.Contains(log.String(), "forbidden") {
		t.Errorf("log %q does not say the Job was forbidden", log.String())
	}

	nobody := clusterAs(t, env, "nobody")
	// At once: the error is the permission's, not the minute's timeout.
	_, err = waitForPeers(ctx, nobody, ns, "job", 2, 100*time.Millisecond, time.Minute, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "config/launcher/rbac.yaml") || strings.Contains(err.Error(), "timed out") {
		t.Fatalf("waitForPeers() as nobody = %v, want a forbidden error pointing at the RBAC manifest", err)
	}
}

// clusterAs is a Cluster authenticated as user.
func clusterAs(t *testing.T, env *testenv.Env, user string, groups ...string) Cluster {
	t.Helper()
	u, err := env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCluster(u.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// applyRBACManifest creates the objects of config/launcher/rbac.yaml in ns
// unchanged, as `kubectl apply -n ns` does.
func applyRBACManifest(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "launcher", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decoding rbac.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("rbac.yaml holds an unexpected %T", obj)
		}
		if err != nil {
			t.Fatalf("applying rbac.yaml: %v", err)
		}
	}
}
