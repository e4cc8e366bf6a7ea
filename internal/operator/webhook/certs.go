package webhook

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Serving certificates without cert-manager: open-policy-agent/cert-controller's
// rotator keeps a CA and a serving certificate in one Secret of the
// operator's namespace, renews them before they expire, and puts the CA into
// the two webhook configurations, keeping it there when they change. Every
// replica runs it; the Secret is what they share. Each replica's pod mounts
// the Secret where its webhook server reads tls.crt and tls.key: the kubelet
// refreshes the files when the Secret changes and the server reloads them.
// With cert-manager (--webhook-certs=external) none of this runs.

// The rotator reads the Secret and the configurations through an informer
// cache of its own: list and watch, asking for the one object by name
// (namedObjectsOnly below), which RBAC authorizes by resourceNames. It
// updates them; it creates nothing (the Secret comes with the manifests).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=list;watch;update,resourceNames=paddlejob-webhook-certs,namespace=paddlejob-system
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=list;watch;update,resourceNames=paddlejob-validating-webhook-configuration;paddlejob-mutating-webhook-configuration

// Certs say where the self-issued certificate is kept and what it serves.
type Certs struct {
	// Namespace and Secret locate the Secret holding the CA and the
	// serving certificate.
	Namespace, Secret string
	// Service is the webhook's Service: the certificate is for its DNS
	// names.
	Service string
	// ExtraNames are further DNS names for the certificate (a URL
	// webhook's host).
	ExtraNames []string
	// CertDir is where the Secret is mounted: the webhook server reads
	// tls.crt and tls.key there.
	CertDir string
	// ValidatingConfig and MutatingConfig are the webhook configurations
	// whose caBundle the CA goes into.
	ValidatingConfig, MutatingConfig string
}

// ServiceHosts are the DNS names of a Service, for its certificate; the API
// server calls a Service's webhook by the third.
func ServiceHosts(service, namespace string) []string {
	return []string{service, service + "." + namespace, service + "." + namespace + ".svc", service + "." + namespace + ".svc.cluster.local"}
}

// Rotate adds the certificate rotator to mgr, on every replica (leader or
// not). It closes ready once the certificate is in CertDir and the webhook
// configurations hold its CA: before that the API server could not call
// this replica's webhook.
func (c Certs) Rotate(mgr manager.Manager, ready chan struct{}) error {
	hosts := ServiceHosts(c.Service, c.Namespace)
	cr := &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: c.Namespace, Name: c.Secret},
		CertDir:        c.CertDir,
		CAName:         "paddlejob-webhook-ca",
		CAOrganization: "paddlejob",
		DNSName:        hosts[2],
		ExtraDNSNames:  append([]string{hosts[0], hosts[1], hosts[3]}, c.ExtraNames...),
		IsReady:        ready,
		// Every replica serves the webhook, so every replica needs the
		// certificate in its cert dir and checks it.
		RequireLeaderElection: false,
	}
	for _, w := range []rotator.WebhookInfo{{Name: c.ValidatingConfig, Type: rotator.Validating}, {Name: c.MutatingConfig, Type: rotator.Mutating}} {
		if w.Name != "" {
			cr.Webhooks = append(cr.Webhooks, w)
		}
	}
	cfg := rest.CopyConfig(mgr.GetConfig())
	collections := c.collections()
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return namedObjectsOnly{next: next, names: collections}
	})
	if err := rotator.AddRotator(configOverride{Manager: mgr, cfg: cfg}, cr); err != nil {
		return fmt.Errorf("the webhook's certificate rotator: %w", err)
	}
	return nil
}

// collections maps the API paths of the collections the rotator watches to
// the one object of each it needs.
func (c Certs) collections() map[string]string {
	names := map[string]string{"/api/v1/namespaces/" + c.Namespace + "/secrets": c.Secret}
	if c.ValidatingConfig != "" {
		names["/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"] = c.ValidatingConfig
	}
	if c.MutatingConfig != "" {
		names["/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"] = c.MutatingConfig
	}
	return names
}

// configOverride is mgr with another REST config: the rotator builds its
// cache from the manager's config, and only that cache gets this one.
type configOverride struct {
	manager.Manager
	cfg *rest.Config
}

func (m configOverride) GetConfig() *rest.Config { return m.cfg }

// namedObjectsOnly makes a list or watch of one of the collections (a GET of
// a path ending in one of names' keys) ask for the named object only, with
// a metadata.name field selector. The rotator's cache lists and watches
// whole collections, which RBAC could only grant on every Secret of the
// namespace and every webhook configuration of the cluster; a request for
// one name is granted by resourceNames.
type namedObjectsOnly struct {
	next  http.RoundTripper
	names map[string]string
}

func (t namedObjectsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return t.next.RoundTrip(req)
	}
	for collection, name := range t.names {
		if strings.HasSuffix(req.URL.Path, collection) {
			req = req.Clone(req.Context())
			q := req.URL.Query()
			q.Set("fieldSelector", fields.OneTermEqualSelector("metadata.name", name).String())
			req.URL.RawQuery = q.Encode()
			break
		}
	}
	return t.next.RoundTrip(req)
}
