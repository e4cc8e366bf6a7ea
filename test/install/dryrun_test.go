package install

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

const fieldManager = "paddlejob-install-test"

// warnings records the API server's warnings (the Warning headers).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// take returns the warnings since the last take.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// cluster is a real API server (envtest) and a client of it.
type cluster struct {
	dyn      dynamic.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	warnings *warnings
}

func (c *cluster) resource(t testing.TB, o *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		t.Fatalf("%s: the API server does not serve the kind: %v", key(o), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			t.Fatalf("%s: a namespaced object without a namespace", key(o))
		}
		return c.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	return c.dyn.Resource(m.Resource)
}

// apply server-side applies o for real.
func (c *cluster) apply(t testing.TB, o *unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.resource(t, o).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		t.Fatalf("applying %s: %v", key(o), err)
	}
	c.warnings.take()
}

// dryRunCreate creates o with a server-side dry run and strict field
// validation, returning the API server's warnings.
func (c *cluster) dryRunCreate(o *unstructured.Unstructured, ri dynamic.ResourceInterface) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.warnings.take()
	_, err := ri.Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager, FieldValidation: "Strict"})
	return c.warnings.take(), err
}

// restrictedNamespace is a namespace that enforces Pod Security "restricted"
// and warns about workloads (Deployments) that would violate it.
func restrictedNamespace(name string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	ns.SetLabels(map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	})
	return ns
}

// Every object of every rendering is accepted by a real API server: the
// CRDs and Namespaces applied for real first, then everything else created
// with a server-side dry run and strict field validation (a misspelled or
// misplaced field fails). The API server must not warn either: the
// namespaces warn about Pod Security "restricted", so a Deployment whose pod
// would be refused there fails here. The ServiceMonitor and cert-manager
// kinds are served by the schema-less CRDs of testdata/crds, so for those
// the dry run checks only that they are well-formed objects of served kinds.
func TestServerSideDryRun(t *testing.T) {
	renderings := append(operatorRenderings(t), configPrometheus(t)) // rendered before the API server starts
	c := startCluster(t)

	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			c.applyCRDsAndNamespaces(t, r)
			n := 0
			for _, o := range r.objs {
				if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" {
					continue
				}
				n++
				warned, err := c.dryRunCreate(o, c.resource(t, o))
				if err != nil {
					t.Errorf("%s: refused: %v", key(o), err)
				}
				for _, w := range warned {
					t.Errorf("%s: the API server warns: %s", key(o), w)
				}
			}
			if n == 0 {
				t.Fatal("nothing to create")
			}
		})
	}

	// The warning check above is live: a Deployment whose pod breaks
	// "restricted" is warned about.
	t.Run("a privileged Deployment is warned about", func(t *testing.T) {
		bad := deployment(t, chartDefault(t)).DeepCopy()
		bad.SetName("privileged")
		containers := slice(bad.Object, "spec", "template", "spec", "containers")
		sc := containers[0].(map[string]any)["securityContext"].(map[string]any)
		sc["privileged"], sc["allowPrivilegeEscalation"] = true, true
		warned, err := c.dryRunCreate(bad, c.resource(t, bad))
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		if !strings.Contains(fmt.Sprint(warned), "PodSecurity") {
			t.Fatalf("no Pod Security warning (got %q): the API server does not check Pod Security, so the dry runs above did not either", warned)
		}
	})

	// And strict field validation is on: a misspelled field is refused.
	t.Run("a misspelled field is refused", func(t *testing.T) {
		bad := deployment(t, chartDefault(t)).DeepCopy()
		bad.SetName("misspelled")
		containers := slice(bad.Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["imagePullPolcy"] = "Always"
		_, err := c.dryRunCreate(bad, c.resource(t, bad))
		if err == nil || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "imagePullPolcy") {
			t.Fatalf("got %v, want a strict field validation error", err)
		}
	})
}

// startCluster starts a control plane with the CRDs of testdata/crds,
// stopped when the test ends, and a dynamic client to it that records the
// API server's warnings.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	env, err := testenv.Start(filepath.Join("testdata", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Log("stopping the control plane:", err)
		}
	})
	rec := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = rec
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), warnings: rec}
}

// applyCRDsAndNamespaces applies for real what the rendering's other
// objects need: its CRDs (envtest installed config/crd/bases already; the
// rendering's must apply over it) and its namespaces, each warning about
// what the restricted Pod Security level would refuse; the rendering's
// namespace when it does not create it.
func (c *cluster) applyCRDsAndNamespaces(t *testing.T, r rendering) {
	t.Helper()
	namespaced := false
	for _, o := range r.objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			c.apply(t, o)
		case "Namespace":
			ns := o.DeepCopy()
			labels := ns.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			// Test only: warn about what enforce would refuse in pods.
			labels["pod-security.kubernetes.io/warn"] = "restricted"
			ns.SetLabels(labels)
			c.apply(t, ns)
			namespaced = namespaced || o.GetName() == r.namespace
		}
	}
	if !namespaced {
		c.apply(t, restrictedNamespace(r.namespace))
	}
	c.mapper.Reset()
}
