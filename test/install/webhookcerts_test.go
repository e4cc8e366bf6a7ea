package install

import (
	"slices"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/operator"
)

// The webhook's certificate in each rendering: cert-manager's, or the one
// the operator issues into its Secret.

// checkWebhookCertificate checks the cert-manager rendering's one
// Certificate: it names the webhook Service's hosts, its Secret is the
// webhook-certs volume's (and the self-issued certificate's is not
// installed), its Issuer is installed, and the operator's args a leave the
// certificates to it. It returns the Certificate's name.
func checkWebhookCertificate(t *testing.T, r rendering, wopts operator.WebhookOptions, a []string) string {
	t.Helper()
	ns := r.namespace
	certs := ofKind(r.objs, "Certificate")
	if len(certs) != 1 {
		t.Fatalf("cert-manager mode with %d Certificates", len(certs))
	}
	cert := certs[0]
	dns := slice(cert.Object, "spec", "dnsNames")
	for _, host := range []string{wopts.Service + "." + ns + ".svc", wopts.Service + "." + ns + ".svc.cluster.local"} {
		if !slices.Contains(dns, any(host)) {
			t.Errorf("the Certificate's dnsNames %v lack %s", dns, host)
		}
	}
	var volumeSecret string
	for _, v := range slice(deployment(t, r).Object, "spec", "template", "spec", "volumes") {
		if str(v, "name") == "webhook-certs" {
			volumeSecret = str(v, "secret", "secretName")
		}
	}
	if s := str(cert.Object, "spec", "secretName"); s == "" || s != volumeSecret {
		t.Errorf("the Certificate's Secret %q is not the webhook-certs volume's %q", s, volumeSecret)
	}
	if issuer := str(cert.Object, "spec", "issuerRef", "name"); find(r.objs, "Issuer", ns, issuer) == nil {
		t.Errorf("the Certificate's issuer %s is not installed", issuer)
	}
	if !slices.Contains(a, "--webhook-certs=external") {
		t.Errorf("cert-manager mode, but the args %q lack --webhook-certs=external", a)
	}
	if find(r.objs, "Secret", ns, wopts.Secret) != nil {
		t.Errorf("cert-manager mode, but the Secret %s of the self-issued certificate is installed", wopts.Secret)
	}
	return cert.GetName()
}

// checkSelfIssuedSecret checks a rendering where the operator issues the
// webhook's certificate: the Secret it keeps it in (--webhook-secret's
// default, which its Role names) is installed, empty, so that the rotator
// finds it and a re-apply leaves what the rotator wrote, and it is the
// webhook-certs volume, mounted at the operator's cert dir.
func checkSelfIssuedSecret(t *testing.T, r rendering, wopts operator.WebhookOptions, a []string) {
	t.Helper()
	secret := mustFind(t, r, "Secret", r.namespace, wopts.Secret)
	for _, field := range []string{"type", "data", "stringData"} {
		if nested(secret.Object, field) != nil {
			t.Errorf("the Secret %s sets %s: re-applying it would undo what the rotator wrote", wopts.Secret, field)
		}
	}
	if slices.ContainsFunc(a, func(arg string) bool {
		return strings.HasPrefix(arg, "--webhook-certs=") && arg != "--webhook-certs=self"
	}) {
		t.Errorf("the operator's args %q leave the certificate to someone else", a)
	}
	var volumeSecret string
	for _, v := range slice(deployment(t, r).Object, "spec", "template", "spec", "volumes") {
		if str(v, "name") == "webhook-certs" {
			volumeSecret = str(v, "secret", "secretName")
		}
	}
	if volumeSecret != wopts.Secret {
		t.Errorf("the webhook-certs volume is the Secret %q, want %q", volumeSecret, wopts.Secret)
	}
	var mountedAt string
	for _, m := range slice(manager(t, r), "volumeMounts") {
		if str(m, "name") == "webhook-certs" {
			mountedAt = str(m, "mountPath")
		}
	}
	if mountedAt != wopts.CertDir {
		t.Errorf("the webhook-certs volume is mounted at %q, want the operator's cert dir %q", mountedAt, wopts.CertDir)
	}
}
