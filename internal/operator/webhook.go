package operator

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
	pjwebhook "github.com/paddlejob/paddlejob/internal/operator/webhook"
)

// Ways the webhook's serving certificate is provided.
const (
	// CertsSelf: the operator issues and renews it (no cert-manager needed).
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
	// ExtraHosts are further names or IPs for the certificate (a URL webhook's).
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
	fs.StringVar(&w.Certs, "webhook-certs", w.Certs, "who provides the webhook's certificate: self (the operator issues and renews it) or external (cert-manager mounts it)")
	fs.StringVar(&w.Service, "webhook-service", w.Service, "name of the webhook's Service")
	fs.StringVar(&w.Namespace, "operator-namespace", w.Namespace, "namespace of the operator: its webhook Service and certificate Secret")
	fs.StringVar(&w.Secret, "webhook-secret", w.Secret, "Secret holding the self-issued webhook certificate (the operator's Role grants get and update on paddlejob-webhook-certs only: grant them on another name too)")
	fs.Func("webhook-cert-hosts", "extra comma-separated names or IPs for the self-issued certificate (a URL webhook's host)", func(v string) error {
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

// webhookServer prepares the webhook's certificate and returns its server,
// or nil when the webhook is off.
func (w WebhookOptions) webhookServer(ctx context.Context, cfg *rest.Config) (webhook.Server, *pjwebhook.CertManager, []byte, error) {
	if w.Port == 0 {
		return nil, nil, nil, nil
	}
	var certs *pjwebhook.CertManager
	var caPEM []byte
	switch w.Certs {
	case CertsExternal:
	case CertsSelf:
		c, err := client.New(cfg, client.Options{Scheme: Scheme})
		if err != nil {
			return nil, nil, nil, err
		}
		certs = &pjwebhook.CertManager{
			Client: c, Namespace: w.Namespace, SecretName: w.Secret, CertDir: w.CertDir,
			Hosts:            append(pjwebhook.ServiceHosts(w.Service, w.Namespace), w.ExtraHosts...),
			ValidatingConfig: w.ValidatingConfig, MutatingConfig: w.MutatingConfig,
		}
		if caPEM, err = certs.Ensure(ctx); err != nil {
			return nil, nil, nil, err
		}
	default:
		return nil, nil, nil, fmt.Errorf("--webhook-certs %q: want self or external", w.Certs)
	}
	return webhook.NewServer(webhook.Options{Host: w.Host, Port: w.Port, CertDir: w.CertDir}), certs, caPEM, nil
}

// setupWebhook registers the webhook and, with self-issued certificates,
// keeps the webhook configurations trusting them. Every replica serves the
// webhook, leader or not.
func setupWebhook(mgr ctrl.Manager, certs *pjwebhook.CertManager, caPEM []byte, opts controller.Options) error {
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
	if certs == nil {
		return nil
	}
	return mgr.Add(everyReplica(func(ctx context.Context) error {
		if err := certs.KeepRenewed(ctx, caPEM, certCheckInterval); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}))
}

// certCheckInterval is how often a replica checks the self-issued
// certificate: it is renewed 90 days before it expires.
const certCheckInterval = time.Hour

// everyReplica is a runnable that runs whether or not this replica leads.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (f everyReplica) NeedLeaderElection() bool        { return false }
