package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The sandbox's attacks are run by users who hold rights in one namespace
// only, as a cluster's tenants do: what such a user can make a pod do on the
// node is what the sandbox must contain. The test itself, the cluster's
// admin, reads what the attacks got.

// namespaceUser is a client of a user who may manage pods (and read their
// logs), ConfigMaps, Services and PaddleJobs in a new namespace, and nothing
// else: the rights a team's member has on a shared cluster.
func namespaceUser(t *testing.T, pj *client.Client) (*client.Client, string) {
	t.Helper()
	return tenant(t, pj, "e2e-namespace-user", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/log", "configmaps", "services"}, Verbs: []string{"*"}},
		{APIGroups: []string{paddlev1.GroupVersion.Group}, Resources: []string{"paddlejobs"}, Verbs: []string{"*"}},
	})
}

// paddleJobUser is a client of a user who may only manage PaddleJobs in a
// new namespace: every pod it gets, the operator creates for it.
func paddleJobUser(t *testing.T, pj *client.Client) (*client.Client, string) {
	t.Helper()
	return tenant(t, pj, "e2e-paddlejob-user", paddleJobUserRules)
}

// paddleJobUserRules are paddleJobUser's rights.
var paddleJobUserRules = []rbacv1.PolicyRule{
	{APIGroups: []string{paddlev1.GroupVersion.Group}, Resources: []string{"paddlejobs"}, Verbs: []string{"*"}},
}

// tenant binds rules to user in a new namespace and returns a client that
// acts as the user (the admin's credentials, impersonating it) and the
// namespace.
func tenant(t *testing.T, pj *client.Client, user string, rules []rbacv1.PolicyRule) (*client.Client, string) {
	t.Helper()
	ns := newNamespace(t, pj)
	return tenantIn(t, pj, ns, user, rules), ns
}

// tenantIn binds rules to user in namespace ns and returns a client that
// acts as the user.
func tenantIn(t *testing.T, pj *client.Client, ns, user string, rules []rbacv1.PolicyRule) *client.Client {
	t.Helper()
	ctx := context.Background()
	rbac := pj.Clientset().RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules}
	if _, err := rbac.Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := rbac.RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(pj.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's authorizer sees the binding through its own cache:
	// the user's first right is granted once it has (a pod created at once
	// was refused in clean-clone run 30).
	first := authorizationv1.ResourceAttributes{Namespace: ns, Group: rules[0].APIGroups[0], Resource: rules[0].Resources[0], Verb: "create"}
	poll(t, time.Minute, "the tenant's rights take effect", func() (bool, string) {
		r, err := c.Clientset().AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &first}}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return r.Status.Allowed, fmt.Sprintf("%s %s allowed: %v", first.Verb, first.Resource, r.Status.Allowed)
	})
	return c
}

// TestTenantsHoldOnlyTheirRights: the attackers' clients are what they say,
// so an attack that fails fails for the sandbox's reason, not for a
// missing right, and one that succeeds was open to a tenant.
func TestTenantsHoldOnlyTheirRights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, mk := range map[string]func(*testing.T, *client.Client) (*client.Client, string){"namespace user": namespaceUser, "PaddleJob user": paddleJobUser} {
		t.Run(name, func(t *testing.T) {
			c, ns := mk(t, suiteClient)
			if _, err := c.List(ctx, ns); err != nil {
				t.Errorf("listing PaddleJobs in its namespace %s: %v", ns, err)
			}
			if _, err := c.Clientset().CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
				t.Errorf("the tenant lists namespaces; it must hold rights in %s only", ns)
			}
			if _, err := c.Clientset().CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err == nil {
				t.Errorf("the tenant lists Secrets in %s; it holds no right to them", ns)
			}
		})
	}
}
