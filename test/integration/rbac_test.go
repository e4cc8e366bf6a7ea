package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// The operator works with exactly the permissions its markers generate
// (config/rbac: the ClusterRole, the namespaced Role, the leader-election
// Role) and nothing more: the manager runs as a user bound to them only,
// with leader election on, and takes a job through its life.
func TestOperatorWorksWithItsGeneratedRBAC(t *testing.T) {
	const user, operatorNS = "rbac-test-operator", "paddlejob-system"
	ensureNamespace(t, operatorNS)
	for _, file := range []string{"role.yaml", "leader_election_role.yaml"} {
		data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", file))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := kube.DecodeManifests(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if err := k8s.Create(ctx(t), o); err != nil && !strings.Contains(err.Error(), "already exists") {
				t.Fatal(err)
			}
			subject := []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}
			ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: o.GetKind(), Name: o.GetName()}
			var binding interface{ GetName() string }
			switch o.GetKind() {
			case "ClusterRole":
				b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rbac-test-" + o.GetName()}, RoleRef: ref, Subjects: subject}
				binding, err = b, k8s.Create(ctx(t), b)
			case "Role":
				b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rbac-test-" + o.GetName(), Namespace: o.GetNamespace()}, RoleRef: ref, Subjects: subject}
				binding, err = b, k8s.Create(ctx(t), b)
			}
			if err != nil && !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("binding %v: %v", binding, err)
			}
		}
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	ctxMgr, cancel := context.WithCancel(context.Background())
	opts := operator.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.Webhook.Port = "0", "0", 0
	opts.SkipNameValidation = true
	opts.LeaderElection, opts.LeaderElectionNS = true, operatorNS
	mgr, err := operator.NewManager(ctxMgr, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctxMgr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the operator stopped with: %v", err)
		}
	})

	ns := newNamespace(t)
	requireOwnerReferencesEnforced(t, ns)
	job := testutil.MakePaddleJob("rbac", ns).PS(1).Workers(2).CleanPodPolicy(paddlev1.CleanPodPolicyOnCompletion).Obj()
	job.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	createJob(t, job)
	names := podNames("rbac", 1, 2, 0)
	waitForPods(t, ns, "rbac", names...)
	runAll(t, ns, "rbac", names)
	for _, n := range names[1:] {
		setPodStatus(t, ns, n, succeeded)
	}
	waitForPhase(t, ns, "rbac", paddlev1.PaddleJobCompleted)
	waitForEvent(t, ns, "rbac", "JobCompleted", "all 2 workers succeeded")
	eventually(t, "the TTL to delete the job", func() (bool, error) {
		err := k8s.Get(ctx(t), kube.Key(ns, "rbac"), &paddlev1.PaddleJob{})
		return isNotFound(err), err
	})
	// Leader election could record its transition: its Role allows the events.
	eventually(t, "the LeaderElection event", func() (bool, error) {
		list, err := clientset.CoreV1().Events(operatorNS).List(ctx(t), metav1.ListOptions{FieldSelector: "reason=LeaderElection"})
		return err == nil && len(list.Items) > 0, err
	})
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := k8s.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
}

// requireOwnerReferencesEnforced shows the API server runs
// OwnerReferencesPermissionEnforcement (suite_test.go): a user who may create
// ConfigMaps but not update a job's finalizers cannot make one that blocks
// the job's deletion. The operator's pods, Services, ConfigMaps and
// PodGroups all do.
func requireOwnerReferencesEnforced(t *testing.T, ns string) {
	t.Helper()
	const user = "no-finalizers"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		{APIGroups: []string{paddlev1.GroupVersion.Group}, Resources: []string{"paddlejobs"}, Verbs: []string{"get", "update"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := k8s.Create(ctx(t), o); err != nil {
			t.Fatal(err)
		}
	}
	owner := testutil.MakePaddleJob("owner", ns).Workers(1).Suspend(true).Obj()
	createJob(t, owner)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blocking", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: paddlev1.GroupVersion.String(), Kind: "PaddleJob", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true),
	}}}}
	err = c.Create(ctx(t), cm)
	if err == nil || !strings.Contains(err.Error(), "cannot set blockOwnerDeletion") {
		t.Fatalf("creating a ConfigMap that blocks its job's deletion without update on paddlejobs/finalizers: %v; want it forbidden by OwnerReferencesPermissionEnforcement", err)
	}
}
