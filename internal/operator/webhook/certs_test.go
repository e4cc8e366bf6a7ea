package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The self-issued certificate is renewed before it expires, by whichever
// replica checks first; every replica then serves the new one, and the
// webhook configurations trust the new CA and the previous one, so a
// replica that has not reloaded yet is still trusted.
func TestCertificateRenewalAcrossReplicas(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.example.com"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(vwc).Build()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	replica := func() *CertManager {
		return &CertManager{Client: c, Namespace: "ops", SecretName: "certs", Hosts: ServiceHosts("svc", "ops"),
			CertDir: t.TempDir(), ValidatingConfig: "v", Now: func() time.Time { return now }}
	}
	a, b := replica(), replica()
	ctx := context.Background()

	caA, err := a.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	caB, err := b.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := served(t, a)
	if !bytes.Equal(caA, caB) || !bytes.Equal(first, served(t, b)) {
		t.Fatal("two replicas serve different certificates")
	}

	// Not yet due: nothing changes.
	now = t0.Add(certValidity - renewBefore - time.Hour)
	if ca, err := a.Ensure(ctx); err != nil || !bytes.Equal(ca, caA) || !bytes.Equal(served(t, a), first) {
		t.Fatalf("renewed too early (err %v)", err)
	}

	// Due: replica a renews; b, checking later, serves a's new certificate.
	now = t0.Add(certValidity - renewBefore + time.Hour)
	renewedCA, err := a.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := served(t, a)
	if bytes.Equal(second, first) {
		t.Fatal("the certificate due for renewal was kept")
	}
	if ca, err := b.Ensure(ctx); err != nil || !bytes.Equal(ca, renewedCA) || !bytes.Equal(served(t, b), second) {
		t.Fatalf("replica b does not serve the renewed certificate (err %v)", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(renewedCA) {
		t.Fatal("the CA bundle does not parse")
	}
	for name, cert := range map[string][]byte{"the renewed certificate": second, "the previous certificate": first} {
		block, _ := pem.Decode(cert)
		parsed, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parsed.Verify(x509.VerifyOptions{Roots: pool, DNSName: "svc.ops.svc", CurrentTime: now}); err != nil {
			t.Errorf("%s is not trusted by the bundle: %v", name, err)
		}
	}

	checkReadyOnceTheWebhookTrustsTheBundle(t, c, a, renewedCA)
}

// checkReadyOnceTheWebhookTrustsTheBundle checks that the replica m is not
// ready before the webhook configuration "v" trusts its CA bundle, that
// injecting the bundle puts it there, and that m is ready then.
func checkReadyOnceTheWebhookTrustsTheBundle(t *testing.T, c client.Client, m *CertManager, bundle []byte) {
	t.Helper()
	ctx := context.Background()
	if m.TrustedCheck(nil) == nil {
		t.Error("ready before the webhook configurations trust its certificate")
	}
	if err := m.InjectCABundle(ctx, bundle); err != nil {
		t.Fatal(err)
	}
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: "v"}, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Webhooks[0].ClientConfig.CABundle, bundle) {
		t.Error("the webhook configuration does not hold the renewed CA bundle")
	}
	if err := m.TrustedCheck(nil); err != nil {
		t.Errorf("not ready once trusted: %v", err)
	}
}

// served is the certificate a replica's webhook server reads.
func served(t *testing.T, m *CertManager) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(m.CertDir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
