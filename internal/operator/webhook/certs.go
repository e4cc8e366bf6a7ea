package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/paddlejob/paddlejob/internal/pki"
)

// Serving certificates without cert-manager: the operator keeps a CA and a
// serving certificate in a Secret of its namespace (every replica shares
// them), writes them where the webhook server reads them, and puts the CA
// into its webhook configurations. With cert-manager, run the operator with
// --webhook-certs=cert-manager and mount the Certificate's Secret instead.

// The operator reads and renews one Secret, by name (--webhook-secret): get
// and update are limited to it. A create cannot be limited by name.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create,namespace=paddlejob-system
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;update,resourceNames=paddlejob-webhook-certs,namespace=paddlejob-system
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;update,resourceNames=paddlejob-validating-webhook-configuration;paddlejob-mutating-webhook-configuration

const (
	certValidity = 2 * 365 * 24 * time.Hour
	// renewBefore renews a certificate this long before it expires.
	renewBefore = 90 * 24 * time.Hour
	caCertKey   = "ca.crt"
)

// CertManager keeps the webhook's serving certificate.
type CertManager struct {
	Client client.Client
	// Namespace and SecretName locate the Secret holding the certificates.
	Namespace, SecretName string
	// Hosts are the names and IPs the certificate is for: the webhook
	// Service's DNS names, and any address a URL webhook uses.
	Hosts []string
	// CertDir is where the webhook server reads tls.crt and tls.key.
	CertDir string
	// ValidatingConfig and MutatingConfig are the webhook configurations
	// whose caBundle the CA goes into.
	ValidatingConfig, MutatingConfig string
	Now                              func() time.Time

	// trusted is set once the webhook configurations hold the CA.
	trusted atomic.Bool
}

// TrustedCheck is a readiness check: it fails until the webhook
// configurations trust the serving certificate, since before that the API
// server refuses every call it makes to this replica.
func (m *CertManager) TrustedCheck(*http.Request) error {
	if !m.trusted.Load() {
		return errors.New("the webhook configurations do not trust the serving certificate yet")
	}
	return nil
}

// ServiceHosts are the DNS names of a Service, for its certificate.
func ServiceHosts(service, namespace string) []string {
	return []string{service, service + "." + namespace, service + "." + namespace + ".svc", service + "." + namespace + ".svc.cluster.local"}
}

// Ensure makes the Secret hold a valid CA and serving certificate for Hosts
// (creating or renewing them), and writes them to CertDir.
func (m *CertManager) Ensure(ctx context.Context) ([]byte, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	var caPEM []byte
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		secret := &corev1.Secret{}
		err := m.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.SecretName}, secret)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		exists := err == nil
		if exists && m.valid(secret, now()) {
			caPEM = secret.Data[caCertKey]
			return nil
		}
		data, err := newCertificates(m.Hosts, now())
		if err != nil {
			return err
		}
		if exists {
			// Replicas serving the previous certificate until they reload
			// it stay trusted: the bundle holds the previous CA too.
			data[caCertKey] = append(data[caCertKey], previousCA(secret.Data[caCertKey], now())...)
		}
		if !exists {
			secret = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.SecretName},
				Type:       corev1.SecretTypeTLS,
				Data:       data,
			}
			if err := m.Client.Create(ctx, secret); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return apierrors.NewConflict(corev1.Resource("secrets"), m.SecretName, err) // another replica won: use its
				}
				return err
			}
		} else {
			secret.Data = data
			if err := m.Client.Update(ctx, secret); err != nil {
				return err
			}
		}
		caPEM = data[caCertKey]
		log.FromContext(ctx).Info("issued the webhook's serving certificate", "secret", m.Namespace+"/"+m.SecretName, "hosts", m.Hosts)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webhook certificates in Secret %s/%s: %w", m.Namespace, m.SecretName, err)
	}
	secret := &corev1.Secret{}
	if err := m.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.SecretName}, secret); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(m.CertDir, 0o700); err != nil {
		return nil, err
	}
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		path := filepath.Join(m.CertDir, k)
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, secret.Data[k]) {
			continue // unchanged: the hourly check makes the server reload nothing
		}
		if err := os.WriteFile(path, secret.Data[k], 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}

// KeepRenewed checks the certificate every interval, renewing it before it
// expires (Ensure) and keeping the webhook configurations trusting the CA,
// until ctx ends. Every replica runs it: the one that renews first updates
// the Secret; each writes the Secret's certificate where its webhook server
// reads it, which reloads it.
func (m *CertManager) KeepRenewed(ctx context.Context, caPEM []byte, interval time.Duration) error {
	if err := m.InjectCABundle(ctx, caPEM); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
		renewed, err := m.Ensure(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "checking the webhook's serving certificate")
			continue
		}
		if !bytes.Equal(renewed, caPEM) {
			if err := m.InjectCABundle(ctx, renewed); err != nil {
				return err
			}
			caPEM = renewed
		}
	}
}

// previousCA is the first certificate of a CA bundle while it is still
// valid, or nothing.
func previousCA(bundle []byte, now time.Time) []byte {
	block, _ := pem.Decode(bundle)
	if block == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || now.After(cert.NotAfter) {
		return nil
	}
	return pem.EncodeToMemory(block)
}

// valid reports whether the Secret's certificate serves Hosts and is not
// about to expire.
func (m *CertManager) valid(secret *corev1.Secret, now time.Time) bool {
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil || len(secret.Data[caCertKey]) == 0 {
		return false
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || now.Add(renewBefore).After(cert.NotAfter) {
		return false
	}
	for _, h := range m.Hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// InjectCABundle puts the CA into the webhook configurations, retrying until
// they exist (they may be applied after the operator starts) or ctx ends.
func (m *CertManager) InjectCABundle(ctx context.Context, caPEM []byte) error {
	for {
		err := m.inject(ctx, caPEM)
		if err == nil {
			m.trusted.Store(true)
			log.FromContext(ctx).Info("webhook configurations trust the serving certificate")
			return nil
		}
		log.FromContext(ctx).V(1).Info("cannot inject the webhook CA yet", "reason", err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (m *CertManager) inject(ctx context.Context, caPEM []byte) error {
	var errs []error
	if m.ValidatingConfig != "" {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		errs = append(errs, m.injectInto(ctx, m.ValidatingConfig, cfg, caPEM, func() []*[]byte {
			bundles := make([]*[]byte, len(cfg.Webhooks))
			for i := range cfg.Webhooks {
				bundles[i] = &cfg.Webhooks[i].ClientConfig.CABundle
			}
			return bundles
		}))
	}
	if m.MutatingConfig != "" {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		errs = append(errs, m.injectInto(ctx, m.MutatingConfig, cfg, caPEM, func() []*[]byte {
			bundles := make([]*[]byte, len(cfg.Webhooks))
			for i := range cfg.Webhooks {
				bundles[i] = &cfg.Webhooks[i].ClientConfig.CABundle
			}
			return bundles
		}))
	}
	return errors.Join(errs...)
}

// injectInto sets every CA bundle of the webhook configuration name, read
// into cfg, to caPEM; bundles lists them once cfg is read. It writes only a
// change, retrying on conflicts.
func (m *CertManager) injectInto(ctx context.Context, name string, cfg client.Object, caPEM []byte, bundles func() []*[]byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := m.Client.Get(ctx, types.NamespacedName{Name: name}, cfg); err != nil {
			return err
		}
		changed := false
		for _, b := range bundles() {
			if !bytes.Equal(*b, caPEM) {
				*b, changed = caPEM, true
			}
		}
		if !changed {
			return nil
		}
		return m.Client.Update(ctx, cfg)
	})
}

// newCertificates makes a CA and a serving certificate it signs for hosts.
func newCertificates(hosts []string, now time.Time) (map[string][]byte, error) {
	ca, err := pki.NewCA("paddlejob-webhook-ca", now, certValidity)
	if err != nil {
		return nil, err
	}
	serving, err := ca.Issue(pki.Spec{CommonName: hosts[0], Server: true, Hosts: hosts}, now, certValidity)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{caCertKey: ca.CertPEM, corev1.TLSCertKey: serving.CertPEM, corev1.TLSPrivateKeyKey: serving.KeyPEM}, nil
}
