package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/server/egressselector"
)

// The egress selector configuration is read and validated by
// kube-apiserver's own code: the cluster egress is HTTP CONNECT over the
// node's socket, the others are left direct.
func TestEgressSelectorConfig(t *testing.T) {
	l := layout{t.TempDir()}
	if err := os.MkdirAll(l.pki(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeEgressSelector(l); err != nil {
		t.Fatal(err)
	}
	cfg, err := egressselector.ReadEgressSelectorConfiguration(egressSelectorFile(l))
	if err != nil {
		t.Fatalf("kube-apiserver cannot read %s: %v", egressSelectorFile(l), err)
	}
	if errs := egressselector.ValidateEgressSelectorConfiguration(cfg); len(errs) > 0 {
		t.Fatalf("kube-apiserver refuses %s: %v", egressSelectorFile(l), errs.ToAggregate())
	}
	if len(cfg.EgressSelections) != 1 {
		t.Fatalf("egress selections %+v; want the cluster one only", cfg.EgressSelections)
	}
	s := cfg.EgressSelections[0]
	if s.Name != "cluster" || s.Connection.ProxyProtocol != apiserver.ProtocolHTTPConnect ||
		s.Connection.Transport == nil || s.Connection.Transport.UDS == nil || s.Connection.Transport.UDS.UDSName != egressSocket(l) {
		t.Fatalf("egress selection %+v (transport %+v); want cluster, HTTPConnect over %s", s, s.Connection.Transport, egressSocket(l))
	}
}

// A home too long for the cluster's Unix sockets is refused before anything
// starts, naming the socket; one that fits passes.
func TestCheckSocketPaths(t *testing.T) {
	fits := layout{"/home/u/.paddlejob"}
	if err := checkSocketPaths(fits); err != nil {
		t.Fatalf("checkSocketPaths(%s) = %v", fits.home, err)
	}
	// Just long enough for the egress socket, not for the elastic etcd's.
	home := "/" + strings.Repeat("h", maxSocketPath-len("/egress.sock")-1)
	if len(egressSocket(layout{home})) > maxSocketPath {
		t.Fatalf("test home too long: %d", len(egressSocket(layout{home})))
	}
	err := checkSocketPaths(layout{home})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(home, "elastic-etcd.sock")) || !strings.Contains(err.Error(), "shorter home") {
		t.Fatalf("checkSocketPaths(a %d-byte home) = %v; want an error naming the elastic etcd's socket and asking for a shorter home", len(home), err)
	}
}

func TestNodeForwards(t *testing.T) {
	got := nodeForwards(Ports{APIServer: 40001, ElasticEtcd: 40002, Progress: 40003, EtcdClient: 40004, Kubelet: 40005})
	want := []string{"--forward=40001=127.0.0.1:40001", "--forward=40002=127.0.0.1:40002", "--forward=40003=127.0.0.1:40003"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("nodeForwards = %v; want %v (the API server, the elastic etcd guard, the progress endpoint, nothing else)", got, want)
	}
}
