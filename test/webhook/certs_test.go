package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// Without cert-manager the operator issues its serving certificate (the
// rotator of open-policy-agent/cert-controller), keeps it in the Secret its
// replicas mount, and makes both webhook configurations trust its CA. It
// renews the certificate before it expires, under the same CA, and issues
// a new CA when the Secret loses its own; through each the webhook serves
// the Secret's certificate and refuses what it refuses.
func TestSelfIssuedCertificates(t *testing.T) {
	w := selfIssuing.opts
	first := waitServed(t, w, nil)
	for _, k := range []string{"ca.crt", "ca.key", corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if len(first.Data[k]) == 0 {
			t.Errorf("the Secret lacks %s", k)
		}
	}
	// In a cluster the API server calls the webhook by its Service's name.
	service := w.Service + "." + w.Namespace + ".svc"
	if _, err := parseCert(t, first.Data[corev1.TLSCertKey]).Verify(x509.VerifyOptions{Roots: pool(t, first.Data["ca.crt"]), DNSName: service}); err != nil {
		t.Errorf("the certificate does not serve %s: %v", service, err)
	}
	refusesReservedName(t, "first")

	// Due for renewal (it expires within 90 days): a new certificate from
	// the same CA.
	expiring := certFromCA(t, first, w, 30*24*time.Hour)
	setSecretData(t, w, map[string][]byte{"ca.crt": first.Data["ca.crt"], "ca.key": first.Data["ca.key"],
		corev1.TLSCertKey: expiring[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: expiring[corev1.TLSPrivateKeyKey]})
	renewed := waitServed(t, w, func(s *corev1.Secret) string {
		if bytes.Equal(s.Data[corev1.TLSCertKey], expiring[corev1.TLSCertKey]) {
			return "the certificate due for renewal is still the Secret's"
		}
		return ""
	})
	if bytes.Equal(renewed.Data[corev1.TLSCertKey], first.Data[corev1.TLSCertKey]) {
		t.Fatal("the first certificate came back instead of a renewed one")
	}
	if left := time.Until(parseCert(t, renewed.Data[corev1.TLSCertKey]).NotAfter); left < 90*24*time.Hour {
		t.Errorf("the renewed certificate expires in %s", left)
	}
	if !bytes.Equal(renewed.Data["ca.crt"], first.Data["ca.crt"]) {
		t.Error("renewing the certificate changed the CA")
	}
	refusesReservedName(t, "renewed")

	// The Secret loses its CA: a new CA, which both configurations trust.
	setSecretData(t, w, nil)
	waitServed(t, w, func(s *corev1.Secret) string {
		if bytes.Equal(s.Data["ca.crt"], first.Data["ca.crt"]) {
			return "the Secret holds the lost CA"
		}
		return ""
	})
	refusesReservedName(t, "new-ca")
	ns := newNamespace(t)
	if err := k8s.Create(context.Background(), testutil.MakePaddleJob("fine", ns).Workers(2).Obj()); err != nil {
		t.Errorf("a valid job, after the new CA: %v", err)
	}
}

// refusesReservedName checks that the webhook refuses a job whose container
// takes the operator's reserved name.
func refusesReservedName(t *testing.T, name string) {
	t.Helper()
	job := testutil.MakePaddleJob(name, newNamespace(t)).Workers(2).Obj()
	job.Spec.Worker.Template.Spec.Containers[0].Name = "wait-for-endpoints"
	err := k8s.Create(context.Background(), job)
	want := `admission webhook "vpaddlejob.batch.paddlepaddle.org" denied the request: PaddleJob.batch.paddlepaddle.org "` + name + `" is invalid: spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v\nwant %q", err, want)
	}
}

// waitServed waits until the Secret holds a CA and a certificate that are
// served — both webhook configurations trust the CA and the webhook presents
// the certificate — and that notYet (if any) accepts: it says why not, or
// "". It returns the Secret.
func waitServed(t *testing.T, w operator.WebhookOptions, notYet func(*corev1.Secret) string) *corev1.Secret {
	t.Helper()
	var secret *corev1.Secret
	var state string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		secret = &corev1.Secret{}
		if err := k8s.Get(ctx, kube.Key(w.Namespace, w.Secret), secret); err != nil {
			return false, err
		}
		if state = servedState(ctx, w, secret); state == "" && notYet != nil {
			state = notYet(secret)
		}
		return state == "", nil
	})
	if err != nil {
		t.Fatalf("the Secret's certificate is not served: %s (%v)", state, err)
	}
	return secret
}

// servedState says what of the Secret's CA and certificate is not served
// yet, or "".
func servedState(ctx context.Context, w operator.WebhookOptions, secret *corev1.Secret) string {
	ca, cert := secret.Data["ca.crt"], secret.Data[corev1.TLSCertKey]
	if len(ca) == 0 || len(cert) == 0 {
		return "the Secret holds no certificate"
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, kube.Key("", w.ValidatingConfig), validating); err != nil {
		return err.Error()
	}
	if err := k8s.Get(ctx, kube.Key("", w.MutatingConfig), mutating); err != nil {
		return err.Error()
	}
	var bundles [][]byte
	for _, h := range validating.Webhooks {
		bundles = append(bundles, h.ClientConfig.CABundle)
	}
	for _, h := range mutating.Webhooks {
		bundles = append(bundles, h.ClientConfig.CABundle)
	}
	for _, b := range bundles {
		if !bytes.Equal(b, ca) {
			return "a webhook configuration does not trust the Secret's CA"
		}
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	addr := net.JoinHostPort(w.Host, strconv.Itoa(w.Port))
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost"})
	if err != nil {
		return fmt.Sprintf("the webhook at %s: %v", addr, err)
	}
	defer conn.Close()
	block, _ := pem.Decode(cert)
	if block == nil || !bytes.Equal(conn.ConnectionState().PeerCertificates[0].Raw, block.Bytes) {
		return "the webhook presents another certificate than the Secret's"
	}
	return ""
}

// setSecretData replaces the data of the operator's Secret.
func setSecretData(t *testing.T, w operator.WebhookOptions, data map[string][]byte) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := k8s.Get(context.Background(), kube.Key(w.Namespace, w.Secret), secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = data
	if err := k8s.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
}

// certFromCA is a serving certificate (tls.crt, tls.key) for the webhook's
// names from the Secret's CA, expiring after validity.
func certFromCA(t *testing.T, secret *corev1.Secret, w operator.WebhookOptions, validity time.Duration) map[string][]byte {
	t.Helper()
	keyBlock, _ := pem.Decode(secret.Data["ca.key"])
	if keyBlock == nil {
		t.Fatal("the Secret's ca.key is not PEM")
	}
	key, err := x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	ca := &rotator.KeyPairArtifacts{Cert: parseCert(t, secret.Data["ca.crt"]), Key: key, CertPEM: secret.Data["ca.crt"], KeyPEM: secret.Data["ca.key"]}
	issuer := &rotator.CertRotator{DNSName: w.Service + "." + w.Namespace + ".svc", ExtraDNSNames: w.ExtraHosts,
		ExtKeyUsages: &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	now := time.Now()
	cert, certKey, err := issuer.CreateCertPEM(ca, now.Add(-time.Hour), now.Add(validity))
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: certKey}
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func pool(t *testing.T, caPEM []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA does not parse")
	}
	return p
}
