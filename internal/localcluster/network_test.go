package localcluster

import (
	"net/netip"
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

func TestForwards(t *testing.T) {
	got := forwards(Ports{APIServer: 40001, ElasticEtcd: 40002, Progress: 40003, EtcdClient: 40004, Kubelets: []int{40005, 40006}})
	want := []string{"--forward=40001=127.0.0.1:40001", "--forward-naming-client=40002=127.0.0.1:40002", "--forward=40003=127.0.0.1:40003"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("forwards = %v; want %v (the API server, the elastic etcd guard, the progress endpoint, nothing else)", got, want)
	}
}

func TestNodeAddresses(t *testing.T) {
	seen := map[string]bool{}
	for i := range MaxNodes {
		ip, pods := nodeAddress(i)
		name := nodeName(i)
		if !isNode(name) || seen[ip] || seen[pods] || seen[name] {
			t.Fatalf("node %d: %s %s %s repeats an earlier node's or is not a node's name", i, name, ip, pods)
		}
		seen[ip], seen[pods], seen[name] = true, true, true
		p := netip.MustParsePrefix(pods)
		if !netip.MustParsePrefix(podCIDR).Contains(p.Addr()) || p.Bits() != 20 || netip.MustParseAddr(ip) == netip.MustParseAddr(hostIP) {
			t.Fatalf("node %d: pods %s outside %s, or IP %s is the host's", i, pods, podCIDR, ip)
		}
	}
	if a, _ := nodeAddress(0); a != "172.18.0.2" || nodeName(0) != NodeName || nodeName(1) != "paddlejob-node-2" {
		t.Fatalf("the first node is %s at %s, the second %s", nodeName(0), a, nodeName(1))
	}
	if isNode(componentNetwork) || isNode(componentOperator) {
		t.Fatalf("isNode takes another component for a node")
	}
}
