package localcluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/internal/pki"
)

// readCert parses a certificate the cluster wrote under pki/.
func readCert(t *testing.T, l layout, name string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(l.pki(), name+".crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s.crt holds no PEM block", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// verifies reports whether cert chains to root for usage.
func verifies(cert, root *x509.Certificate, usage x509.ExtKeyUsage) error {
	roots := x509.NewCertPool()
	roots.AddCert(root)
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// The etcd CA issues each etcd's peer certificate, for serving and dialing
// its peers at 127.0.0.1 under its own name, and the API server's client
// certificate; its key and theirs are the cluster's alone. It is not the
// cluster's CA: a client certificate that CA signs — as the controller
// manager signs every approved CertificateSigningRequest — does not open
// etcd, nor does any of the components' own.
func TestEtcdCertificatesAreTheEtcdCAs(t *testing.T) {
	b := &boot{l: layout{t.TempDir()}, st: &State{Ports: Ports{APIServer: 6443}}}
	if err := os.MkdirAll(b.l.pki(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := b.certificates(); err != nil {
		t.Fatal(err)
	}
	etcdCA, clusterCA := readCert(t, b.l, etcdCAName), readCert(t, b.l, "ca")
	if !etcdCA.IsCA || etcdCA.Subject.String() == clusterCA.Subject.String() || string(etcdCA.Raw) == string(clusterCA.Raw) {
		t.Fatalf("the etcd CA %q is not a CA of its own beside the cluster's %q", etcdCA.Subject, clusterCA.Subject)
	}
	for _, peer := range []string{etcdPeerName, elasticEtcdPeerName} {
		cert := readCert(t, b.l, peer)
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if err := verifies(cert, etcdCA, usage); err != nil {
				t.Errorf("%s for usage %v: %v", peer, usage, err)
			}
		}
		if cert.Subject.CommonName != peer || cert.VerifyHostname("127.0.0.1") != nil {
			t.Errorf("%s names %q for %v, want %q for 127.0.0.1 (its etcd's --peer-cert-allowed-cn)", peer, cert.Subject.CommonName, cert.IPAddresses, peer)
		}
	}
	if err := verifies(readCert(t, b.l, etcdServingName), etcdCA, x509.ExtKeyUsageServerAuth); err != nil {
		t.Errorf("the etcd's serving certificate: %v", err)
	}
	if err := verifies(readCert(t, b.l, apiServerEtcdClient), etcdCA, x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("the API server's etcd client certificate: %v", err)
	}

	// What the cluster CA signs, etcd refuses.
	ca, err := pki.NewCA("paddlejob-local-ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	csrSigned, err := ca.Issue(pki.Spec{CommonName: "etcd-peer", Organization: []string{"system:masters"}, Client: true}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifies(csrSigned.Cert, etcdCA, x509.ExtKeyUsageClientAuth); err == nil {
		t.Error("a certificate of another CA verifies against the etcd CA")
	}
	for _, c := range []string{"admin", componentNode, componentOperator, "apiserver-kubelet-client"} {
		if err := verifies(readCert(t, b.l, c), etcdCA, x509.ExtKeyUsageClientAuth); err == nil {
			t.Errorf("%s's client certificate, of the cluster CA, verifies against the etcd CA", c)
		}
	}
	for _, name := range []string{etcdCAName, etcdServingName, etcdPeerName, elasticEtcdPeerName, apiServerEtcdClient} {
		info, err := os.Stat(filepath.Join(b.l.pki(), name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s.key has mode %v, want 0600", name, info.Mode().Perm())
		}
	}
}

// flagValue is the value of --name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// Both etcds listen to their peers in TLS only, requiring a client
// certificate of the etcd CA in their own peer's name; the control plane
// etcd's clients need a certificate of the etcd CA; the elastic etcd serves
// clients on a socket in the hidden home, and its guard listens on the URL
// elastic jobs are given.
func TestEtcdArgsRequirePeerCertificates(t *testing.T) {
	l := layout{"/home/u/.paddlejob"}
	ports := Ports{EtcdClient: 40001, EtcdPeer: 40002, ElasticEtcd: 40003, ElasticEtcdPeer: 40004}
	etcdCA := filepath.Join(l.pki(), "etcd-ca.crt")
	for _, tc := range []struct {
		etcd, member, peerCert, peerURL string
		args                            []string
	}{
		{"control plane etcd", "paddlejob", etcdPeerName, "https://127.0.0.1:40002", etcdArgs(l, "/bins", ports)},
		{"elastic etcd", "elastic", elasticEtcdPeerName, "https://127.0.0.1:40004", elasticEtcdArgs(l, "/bins", ports)},
	} {
		want := map[string]string{
			"listen-peer-urls":            tc.peerURL,
			"initial-advertise-peer-urls": tc.peerURL,
			"initial-cluster":             tc.member + "=" + tc.peerURL,
			"peer-cert-file":              filepath.Join(l.pki(), tc.peerCert+".crt"),
			"peer-key-file":               filepath.Join(l.pki(), tc.peerCert+".key"),
			"peer-trusted-ca-file":        etcdCA,
			"peer-cert-allowed-cn":        tc.peerCert,
		}
		for flag, value := range want {
			if got, ok := flagValue(tc.args, flag); !ok || got != value {
				t.Errorf("%s: --%s=%q, want %q", tc.etcd, flag, got, value)
			}
		}
		if !slices.Contains(tc.args, "--peer-client-cert-auth") {
			t.Errorf("%s: no --peer-client-cert-auth in %v", tc.etcd, tc.args)
		}
		if _, ok := flagValue(tc.args, "peer-auto-tls"); ok {
			t.Errorf("%s: --peer-auto-tls trusts any certificate", tc.etcd)
		}
	}

	etcd := etcdArgs(l, "/bins", ports)
	for flag, value := range map[string]string{
		"listen-client-urls": "https://127.0.0.1:40001", "trusted-ca-file": etcdCA,
		"cert-file": filepath.Join(l.pki(), "etcd.crt"), "listen-metrics-urls": "",
	} {
		if got, ok := flagValue(etcd, flag); !ok || got != value {
			t.Errorf("control plane etcd: --%s=%q, want %q", flag, got, value)
		}
	}
	if !slices.Contains(etcd, "--client-cert-auth") {
		t.Errorf("control plane etcd: no --client-cert-auth in %v", etcd)
	}
	elastic := elasticEtcdArgs(l, "/bins", ports)
	if got, _ := flagValue(elastic, "listen-client-urls"); got != "unix:///home/u/.paddlejob/elastic-etcd.sock" {
		t.Errorf("elastic etcd: --listen-client-urls=%q, want its socket in the cluster's home, which pods do not see", got)
	}
	if got, _ := flagValue(elastic, "advertise-client-urls"); got != elasticEtcdURL(ports) || got != "http://172.18.0.1:40003" {
		t.Errorf("elastic etcd: --advertise-client-urls=%q, want %q, its guard's forward on the host IP, which elastic jobs are given", got, elasticEtcdURL(ports))
	}
	guard := elasticEtcdGuardArgs(l, "/bin/paddlejob", ports)
	for flag, value := range map[string]string{"listen": "127.0.0.1:40003", "etcd": "unix:///home/u/.paddlejob/elastic-etcd.sock"} {
		if got, ok := flagValue(guard, flag); !ok || got != value {
			t.Errorf("elastic etcd guard: --%s=%q, want %q", flag, got, value)
		}
	}
	if got, _ := flagValue(elastic, "listen-metrics-urls"); got != "" {
		t.Errorf("elastic etcd: --listen-metrics-urls=%q opens another listener", got)
	}
}
