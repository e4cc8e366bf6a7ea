package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1beta1 "k8s.io/apiserver/pkg/apis/apiserver/v1beta1"

	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"sigs.k8s.io/yaml"
)

// The cluster's network, as the control plane sees it. The control plane
// runs on the host's loopback; pods live in network namespaces the node
// makes, which do not route to the host (docs/local-cluster.md#network):
//   - pods reach the host only through the node's forwards: ports of the
//     node IP, inside the node's namespace, each joined to one loopback
//     address — the API server, the elastic etcd guard, the operator's
//     progress endpoint (nodeForwards). Each keeps its host port number;
//   - the API server reaches the cluster network (the kubelet API, pods and
//     Services through its proxy, webhooks and aggregated APIs behind
//     Services) through its `cluster` egress: HTTP CONNECT over a Unix socket
//     in the home that the node serves, dialing only pod, Service and node
//     addresses inside its namespace (egressSelectorConfig).
const (
	nodeIP      = "172.18.0.2"
	serviceCIDR = "10.96.0.0/16"
	// serviceIP is the `kubernetes` Service's cluster IP, the first of
	// serviceCIDR.
	serviceIP = "10.96.0.1"
	// clusterDNSIP is the kube-dns Service address pods resolve with.
	clusterDNSIP = node.DefaultClusterDNSIP
)

// egressSocket is where the node serves the API server's egress: the
// cluster's home, which the node hides from every pod. Its name is shorter
// than the elastic etcd's socket, so any home short enough for one is short
// enough for both (checkSocketPaths).
func egressSocket(l layout) string { return filepath.Join(l.home, "egress.sock") }

// egressSelectorFile is the API server's --egress-selector-config-file.
func egressSelectorFile(l layout) string { return filepath.Join(l.pki(), "egress-selector.yaml") }

// checkSocketPaths fails, before anything starts, when the home is too long
// for its Unix sockets: a socket's path holds at most 107 bytes, and the
// home is the one place hidden from pods, so they cannot move elsewhere.
func checkSocketPaths(l layout) error {
	for _, s := range []string{elasticEtcdSocket(l), egressSocket(l)} {
		if len(s) > maxSocketPath {
			return fmt.Errorf("the cluster's socket %s is %d bytes long, more than a Unix socket's %d: give the cluster a shorter home (PADDLEJOB_HOME)",
				s, len(s), maxSocketPath)
		}
	}
	return nil
}

// egressSelectorConfig is the API server's egress selector: the `cluster`
// egress goes through the node's socket; the control plane's (webhooks and
// authenticators at URLs, which are loopback ones here) and etcd's stay
// direct.
func egressSelectorConfig(socket string) ([]byte, error) {
	cfg := apiserverv1beta1.EgressSelectorConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1beta1.SchemeGroupVersion.String(), Kind: "EgressSelectorConfiguration"},
		EgressSelections: []apiserverv1beta1.EgressSelection{{
			Name: "cluster",
			Connection: apiserverv1beta1.Connection{
				ProxyProtocol: apiserverv1beta1.ProtocolHTTPConnect,
				Transport:     &apiserverv1beta1.Transport{UDS: &apiserverv1beta1.UDSTransport{UDSName: socket}},
			},
		}},
	}
	return yaml.Marshal(cfg)
}

// writeEgressSelector writes the API server's egress selector configuration.
func writeEgressSelector(l layout) error {
	data, err := egressSelectorConfig(egressSocket(l))
	if err != nil {
		return err
	}
	return os.WriteFile(egressSelectorFile(l), data, 0o600)
}

// nodeForwards are the node's --forward flags: the host endpoints pods use,
// each on the node IP at its own port number.
func nodeForwards(p Ports) []string {
	var out []string
	for _, port := range []int{p.APIServer, p.ElasticEtcd, p.Progress} {
		out = append(out, fmt.Sprintf("--forward=%d=127.0.0.1:%d", port, port))
	}
	return out
}

// onNode is the URL of a forwarded host endpoint as pods reach it.
func onNode(scheme string, port int) string { return fmt.Sprintf("%s://%s:%d", scheme, nodeIP, port) }

// NodeIP is the node's IP, where pods reach the host's forwarded endpoints
// (the API server, the elastic etcd guard, the progress endpoint), each at
// its port of Ports.
func (s *State) NodeIP() string { return nodeIP }

// EgressSocket is where the node serves the API server's egress into the
// cluster network, for tests on the host that reach pods and cluster IPs
// the way the API server does.
func (s *State) EgressSocket() string { return egressSocket(layout{s.Home}) }
