package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/paddlejob/paddlejob/internal/localcluster/etcdguard"
	"github.com/paddlejob/paddlejob/internal/pki"
)

// The cluster's two etcds: the control plane's store and the elastic
// rendezvous of Paddle's jobs. Pods reach the host only through the node's
// forwards (network.go), the elastic etcd guard's among them, but every
// process of this machine reaches every loopback port, so no etcd listener
// trusts a connection for where it comes from:
//   - both peer listeners take TLS only, from a client certificate of the
//     etcd CA naming that etcd's own peer (--peer-cert-allowed-cn): no pod
//     can read their members or forge raft messages;
//   - the control plane etcd's client listener takes TLS only, from a
//     client certificate of the etcd CA: the API server's;
//   - the elastic etcd's client listener is a Unix socket in the cluster's
//     home, which pods do not see. Paddle's elastic launcher dials etcd
//     without credentials, so pods get the elastic etcd guard instead
//     (etcdguard): a plain gRPC port that forwards the key-value, watch and
//     lease calls of elastic training and refuses the rest — membership,
//     maintenance, authentication — before they reach etcd
//     (docs/local-cluster.md).
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

// elasticEtcdArgs are the elastic etcd's command line. It serves clients
// on its socket only; the URL it advertises is its guard's, the one its
// clients are given.
func elasticEtcdArgs(l layout, bins string, ports Ports) []string {
	args := []string{filepath.Join(bins, "etcd"),
		"--name=elastic", "--data-dir=" + l.elasticEtcdData(),
		"--listen-client-urls=unix://" + elasticEtcdSocket(l), "--advertise-client-urls=" + elasticEtcdURL(ports),
	}
	args = append(args, peerArgs(l, "elastic", elasticEtcdPeerName, ports.ElasticEtcdPeer)...)
	return append(args, "--listen-metrics-urls=", "--unsafe-no-fsync", "--log-level=warn")
}

// elasticEtcdURL is the elastic etcd guard's URL as pods reach it, its
// forward on the host IP (network.go), given to elastic jobs as the elastic
// etcd's.
func elasticEtcdURL(ports Ports) string { return onHost("http", ports.ElasticEtcd) }

// elasticEtcdSocket is where the elastic etcd serves clients: the cluster's
// home, which the node hides from every pod.
func elasticEtcdSocket(l layout) string { return filepath.Join(l.home, "elastic-etcd.sock") }

// maxSocketPath is the longest path a Unix socket may have (sun_path holds
// 108 bytes, the last a NUL).
const maxSocketPath = 107

// elasticEtcdGuardArgs are the guard's command line: this program's hidden
// elastic-etcd-guard command, on the port elastic jobs are given.
func elasticEtcdGuardArgs(l layout, executable string, ports Ports) []string {
	return []string{executable, "elastic-etcd-guard",
		"--listen=127.0.0.1:" + itoa(ports.ElasticEtcd), "--etcd=unix://" + elasticEtcdSocket(l),
		// The node's user may watch every pod: the guard tells a caller's
		// job by the pod at its address.
		"--kubeconfig=" + l.componentConfig(componentNode)}
}

func (b *boot) startEtcd(ctx context.Context) error {
	return b.launch(ctx, componentEtcd, etcdArgs(b.l, b.bins, b.st.Ports), nil, 30*time.Second,
		func() error { return dialTLS(b.st.Ports.EtcdClient) })
}

// startElasticEtcd starts the etcd of Paddle's elastic rendezvous: jobs'
// pods reach it, through its guard, without credentials, so it is not the
// cluster's own store.
func (b *boot) startElasticEtcd(ctx context.Context) error {
	socket := elasticEtcdSocket(b.l) // its length checked by checkSocketPaths
	return b.launch(ctx, componentElasticEtcd, elasticEtcdArgs(b.l, b.bins, b.st.Ports), nil, 30*time.Second,
		func() error { return dialUnix(socket) })
}

// startElasticEtcdGuard starts the elastic etcd's guard, ready once a call
// through it reaches etcd.
func (b *boot) startElasticEtcdGuard(ctx context.Context) error {
	addr := "127.0.0.1:" + itoa(b.st.Ports.ElasticEtcd)
	return b.launch(ctx, componentElasticEtcdGuard, elasticEtcdGuardArgs(b.l, b.opts.Executable, b.st.Ports), nil, 30*time.Second,
		func() error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return etcdguard.Ready(ctx, addr)
		})
}

// dialUnix reports whether something accepts connections on socket.
func dialUnix(socket string) error {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// etcdPeersUseTLS reports whether the cluster in l was started with the
// etcd CA, and so with TLS peers: a cluster an earlier paddlejob started,
// still running, has plain HTTP peer ports until it is restarted.
func etcdPeersUseTLS(l layout) bool {
	_, err := os.Stat(filepath.Join(l.pki(), etcdCAName+".crt"))
	return err == nil
}

// ElasticEtcdSocket is where the cluster's elastic etcd serves clients, for
// tests that ask etcd itself, behind its guard.
func (s *State) ElasticEtcdSocket() string { return elasticEtcdSocket(layout{s.Home}) }
