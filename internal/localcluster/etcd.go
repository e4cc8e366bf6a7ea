package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/paddlejob/paddlejob/internal/pki"
)

// The cluster's two etcds: the control plane's store and the elastic
// rendezvous of Paddle's jobs. Pods are processes of this machine and reach
// every loopback port, so no etcd listener trusts a connection for where
// it comes from:
//   - both peer listeners take TLS only, from a client certificate of the
//     etcd CA naming that etcd's own peer (--peer-cert-allowed-cn): no pod
//     can read their members or forge raft messages;
//   - the control plane etcd's client listener takes TLS only, from a
//     client certificate of the etcd CA: the API server's;
//   - the elastic etcd's client listener is plain HTTP, as Paddle's elastic
//     launcher dials it without credentials (docs/local-cluster.md).
//
// The etcd CA is not the cluster's CA: the controller manager signs
// approved CertificateSigningRequests with the cluster's, and such a
// certificate must not open etcd.

// Names of the etcd CA's certificates (file stems under pki/) and of the
// peers their certificates name.
const (
	etcdCAName          = "etcd-ca"
	etcdServingName     = "etcd"
	etcdPeerName        = "etcd-peer"
	elasticEtcdPeerName = "elastic-etcd-peer"
	apiServerEtcdClient = "apiserver-etcd-client"
)

// etcdCerts are the certificates the etcd CA issues: the peers' serve and
// dial with theirs, the control plane etcd serves clients with its own
// (which it also presents when its gateway dials itself) and the API
// server is its one client.
func etcdCerts() []certSpec {
	loopback := []string{"127.0.0.1", "localhost"}
	return []certSpec{
		{name: etcdServingName, Spec: pki.Spec{CommonName: "etcd", Server: true, Client: true, Hosts: loopback}},
		{name: etcdPeerName, Spec: pki.Spec{CommonName: etcdPeerName, Server: true, Client: true, Hosts: loopback}},
		{name: elasticEtcdPeerName, Spec: pki.Spec{CommonName: elasticEtcdPeerName, Server: true, Client: true, Hosts: loopback}},
		{name: apiServerEtcdClient, Spec: pki.Spec{CommonName: "kube-apiserver-etcd-client", Client: true}},
	}
}

// etcdCertificates creates the etcd CA and its certificates under dir.
func etcdCertificates(dir string) (*keyPair, error) {
	ca, err := newCA(dir, etcdCAName, "paddlejob-local-etcd-ca")
	if err != nil {
		return nil, err
	}
	for _, s := range etcdCerts() {
		if _, err := ca.issue(dir, s); err != nil {
			return nil, err
		}
	}
	return ca, nil
}

// peerArgs are the flags of an etcd named name whose peer listener is
// 127.0.0.1:port, TLS with its peer certificate, accepting only its own.
func peerArgs(l layout, name, peerCert string, port int) []string {
	pki := l.pki()
	peer := fmt.Sprintf("https://127.0.0.1:%d", port)
	return []string{
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + name + "=" + peer,
		"--peer-cert-file=" + filepath.Join(pki, peerCert+".crt"), "--peer-key-file=" + filepath.Join(pki, peerCert+".key"),
		"--peer-trusted-ca-file=" + filepath.Join(pki, etcdCAName+".crt"),
		"--peer-client-cert-auth", "--peer-cert-allowed-cn=" + peerCert,
	}
}

// etcdArgs are the control plane etcd's command line.
func etcdArgs(l layout, bins string, ports Ports) []string {
	pki := l.pki()
	client := fmt.Sprintf("https://127.0.0.1:%d", ports.EtcdClient)
	args := []string{filepath.Join(bins, "etcd"),
		"--name=paddlejob", "--data-dir=" + l.etcdData(),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--cert-file=" + filepath.Join(pki, etcdServingName+".crt"), "--key-file=" + filepath.Join(pki, etcdServingName+".key"),
		"--client-cert-auth", "--trusted-ca-file=" + filepath.Join(pki, etcdCAName+".crt"),
	}
	args = append(args, peerArgs(l, "paddlejob", etcdPeerName, ports.EtcdPeer)...)
	return append(args,
		"--listen-metrics-urls=", // no extra listener
		// A throwaway development store: durability is not worth the fsyncs.
		"--unsafe-no-fsync", "--quota-backend-bytes=2147483648",
		"--log-level=warn",
	)
}

// elasticEtcdArgs are the elastic etcd's command line.
func elasticEtcdArgs(l layout, bins string, ports Ports) []string {
	client := elasticEtcdURL(ports)
	args := []string{filepath.Join(bins, "etcd"),
		"--name=elastic", "--data-dir=" + l.elasticEtcdData(),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
	}
	args = append(args, peerArgs(l, "elastic", elasticEtcdPeerName, ports.ElasticEtcdPeer)...)
	return append(args, "--listen-metrics-urls=", "--unsafe-no-fsync", "--log-level=warn")
}

// elasticEtcdURL is the elastic etcd's client URL, given to elastic jobs.
func elasticEtcdURL(ports Ports) string {
	return fmt.Sprintf("http://127.0.0.1:%d", ports.ElasticEtcd)
}

func (b *boot) startEtcd(ctx context.Context) error {
	return b.launch(ctx, componentEtcd, etcdArgs(b.l, b.bins, b.st.Ports), nil, 30*time.Second,
		func() error { return dialTLS(b.st.Ports.EtcdClient) })
}

// startElasticEtcd starts the etcd of Paddle's elastic rendezvous: jobs'
// pods reach its client port without credentials, so it is not the
// cluster's own store.
func (b *boot) startElasticEtcd(ctx context.Context) error {
	return b.launch(ctx, componentElasticEtcd, elasticEtcdArgs(b.l, b.bins, b.st.Ports), nil, 30*time.Second,
		func() error { return dialTLS(b.st.Ports.ElasticEtcd) })
}

// etcdPeersUseTLS reports whether the cluster in l was started with the
// etcd CA, and so with TLS peers: a cluster an earlier paddlejob started,
// still running, has plain HTTP peer ports until it is restarted.
func etcdPeersUseTLS(l layout) bool {
	_, err := os.Stat(filepath.Join(l.pki(), etcdCAName+".crt"))
	return err == nil
}
