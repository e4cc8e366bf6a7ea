package operator

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
	pjwebhook "github.com/paddlejob/paddlejob/internal/operator/webhook"
)

// Ways the webhook's serving certificate is provided.
const (
	// CertsSelf: the operator issues and renews it (no cert-manager needed),
	// with open-policy-agent/cert-controller's rotator (webhook/certs.go).
	CertsSelf = "self"
	// CertsExternal: something else (cert-manager) mounts it in the cert dir.
	CertsExternal = "external"
)

// WebhookOptions configure the admission webhook server.
type WebhookOptions struct {
	// Port of the webhook server; 0 runs no webhook. Host is the address it
	// binds (all when empty).
	Port    int
	Host    string
	CertDir string
	Certs   string
	// Service and Namespace name the webhook's Service (its DNS names go in
	// the certificate) and where the certificate Secret lives.
	Service, Namespace, Secret string
	// ExtraHosts are further DNS names for the self-issued certificate (a
	// URL webhook's host).
	ExtraHosts []string
	// ValidatingConfig and MutatingConfig receive the CA.
	ValidatingConfig, MutatingConfig string
}

// DefaultWebhookOptions are the flags' defaults, matching config/default.
func DefaultWebhookOptions() WebhookOptions {
	return WebhookOptions{
		Port:             9443,
		CertDir:          "/tmp/k8s-webhook-server/serving-certs",
		Certs:            CertsSelf,
		Service:          "paddlejob-webhook-service",
		Namespace:        ownNamespace(),
		Secret:           "paddlejob-webhook-certs",
		ValidatingConfig: "paddlejob-validating-webhook-configuration",
		MutatingConfig:   "paddlejob-mutating-webhook-configuration",
	}
}

func (w *WebhookOptions) bindFlags(fs *flag.FlagSet) {
	fs.IntVar(&w.Port, "webhook-port", w.Port, "port of the admission webhook server; 0 disables the webhook")
	fs.StringVar(&w.Host, "webhook-host", w.Host, "address the webhook server binds (default: all)")
	fs.StringVar(&w.CertDir, "webhook-cert-dir", w.CertDir, "directory of the webhook's tls.crt and tls.key")
	fs.StringVar(&w.Certs, "webhook-certs", w.Certs, "who provides the webhook's certificate: self (the operator issues and renews it in the Secret --webhook-secret, which its pod mounts at --webhook-cert-dir) or external (cert-manager mounts it)")
	fs.StringVar(&w.Service, "webhook-service", w.Service, "name of the webhook's Service")
	fs.StringVar(&w.Namespace, "operator-namespace", w.Namespace, "namespace of the operator: its webhook Service and certificate Secret")
	fs.StringVar(&w.Secret, "webhook-secret", w.Secret, "Secret holding the self-issued webhook certificate; it must exist (config/ and the chart install paddlejob-webhook-certs, empty) and be mounted at --webhook-cert-dir. The operator's Role grants list, watch and update on paddlejob-webhook-certs only: grant them on another name too")
	fs.Func("webhook-cert-hosts", "extra comma-separated DNS names for the self-issued certificate (a URL webhook's host)", func(v string) error {
		w.ExtraHosts = strings.Split(v, ",")
		return nil
	})
}

// ownNamespace is the namespace the operator runs in, from the service
// account's mount, else paddlejob-system.
func ownNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b))
	}
	return "paddlejob-system"
}

// webhookServer returns the webhook's server, or nil when the webhook is
// off. With self-issued certificates it starts serving only once the
// rotator has put the certificate in place (certsReady, which the rotator
// setupWebhook adds closes): the server reads it when it starts.
func (w WebhookOptions) webhookServer() (webhook.Server, chan struct{}, error) {
	if w.Port == 0 {
		return nil, nil, nil
	}
	server := webhook.NewServer(webhook.Options{Host: w.Host, Port: w.Port, CertDir: w.CertDir})
	switch w.Certs {
	case CertsExternal:
		return server, nil, nil
	case CertsSelf:
		for _, h := range w.ExtraHosts {
			if net.ParseIP(h) != nil {
				return nil, nil, fmt.Errorf("--webhook-cert-hosts %q: an IP address, but the self-issued certificate names DNS names only: use a name (localhost) or --webhook-certs=external", h)
			}
		}
		certsReady := make(chan struct{})
		return serverAfter{Server: server, ready: certsReady}, certsReady, nil
	default:
		return nil, nil, fmt.Errorf("--webhook-certs %q: want self or external", w.Certs)
	}
}

// serverAfter is a webhook server that starts once ready is closed.
type serverAfter struct {
	webhook.Server
	ready <-chan struct{}
}

func (s serverAfter) Start(ctx context.Context) error {
	select {
	case <-s.ready:
		return s.Server.Start(ctx)
	case <-ctx.Done():
		return nil
	}
}

// setupWebhook registers the webhook and, with self-issued certificates
// (certsReady not nil), the rotator that keeps them and closes certsReady
// once they are in place. Every replica serves the webhook, leader or not.
func (w WebhookOptions) setupWebhook(mgr ctrl.Manager, certsReady chan struct{}, opts controller.Options) error {
	wh := &pjwebhook.PaddleJobWebhook{
		Validator: controller.NewValidator(opts),
		FirstPods: func(job *paddlev1.PaddleJob) map[paddlev1.ReplicaType]*corev1.Pod {
			return controller.FirstPods(job, opts)
		},
		Client: mgr.GetClient(),
	}
	if err := wh.Setup(mgr); err != nil {
		return err
	}
	if certsReady == nil {
		return nil
	}
	certs := pjwebhook.Certs{
		Namespace: w.Namespace, Secret: w.Secret, Service: w.Service, ExtraNames: w.ExtraHosts, CertDir: w.CertDir,
		ValidatingConfig: w.ValidatingConfig, MutatingConfig: w.MutatingConfig,
	}
	return certs.Rotate(mgr, certsReady)
}

// certsInPlace is a readiness check: it fails until the self-issued
// certificate is in the cert dir and the webhook configurations trust it.
func certsInPlace(certsReady <-chan struct{}, certDir string) healthz.Checker {
	return func(*http.Request) error {
		select {
		case <-certsReady:
			return nil
		default:
			return fmt.Errorf("waiting for the webhook's certificate in %s (the Secret mounted there) and its CA in the webhook configurations", certDir)
		}
	}
}

// everyReplica is a runnable that runs whether or not this replica leads.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (f everyReplica) NeedLeaderElection() bool        { return false }
