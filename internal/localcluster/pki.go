package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"time"

	"github.com/paddlejob/paddlejob/internal/pki"
)

// certValidity is long enough for a development cluster to outlive a laptop;
// `paddlejob down` throws the certificates away with the state.
const certValidity = 5 * 365 * 24 * time.Hour

// keyPair is a certificate written to files under the cluster's pki/.
type keyPair struct {
	*pki.KeyPair
	CertFile, KeyFile string
}

// certSpec names a certificate's files and says what it is for.
type certSpec struct {
	name string // file name stem under pki/
	pki.Spec
}

// newCA creates a certificate authority, written as name.crt and name.key
// under dir.
func newCA(dir, name, commonName string) (*keyPair, error) {
	ca, err := pki.NewCA(commonName, time.Now(), certValidity)
	if err != nil {
		return nil, err
	}
	return writeKeyPair(dir, name, ca)
}

// issue signs a certificate for spec with the CA.
func (ca *keyPair) issue(dir string, spec certSpec) (*keyPair, error) {
	kp, err := ca.Issue(spec.Spec, time.Now(), certValidity)
	if err != nil {
		return nil, err
	}
	return writeKeyPair(dir, spec.name, kp)
}

func writeKeyPair(dir, name string, kp *pki.KeyPair) (*keyPair, error) {
	out := &keyPair{KeyPair: kp, CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	if err := os.WriteFile(out.CertFile, kp.CertPEM, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(out.KeyFile, kp.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	return out, nil
}

// writeServiceAccountKey writes the key pair that signs and verifies service
// account tokens.
func writeServiceAccountKey(dir string) (private, public string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	private, public = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return "", "", err
	}
	return private, public, nil
}
