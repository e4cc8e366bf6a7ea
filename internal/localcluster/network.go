package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1beta1 "k8s.io/apiserver/pkg/apis/apiserver/v1beta1"

	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"sigs.k8s.io/yaml"
)

// The cluster's network, as the control plane sees it. The control plane
// runs on the host's loopback; pods live in network namespaces the nodes
// make, which do not route to the host (docs/local-cluster.md#network):
//   - every node has an IP of nodesCIDR and its share of podCIDR (nodeAddress);
//     the cluster network component joins the nodes' uplinks and plays the
//     host at hostIP, as a container network's gateway does;
//   - pods reach the host only through the cluster network's forwards: ports
//     of hostIP, each joined to one loopback address — the API server, the
//     elastic etcd guard, the operator's progress endpoint (forwards). Each
//     keeps its host port number;
//   - the API server reaches the cluster network (the kubelet APIs, pods and
//     Services through its proxy, webhooks and aggregated APIs behind
//     Services) through its `cluster` egress: HTTP CONNECT over a Unix socket
//     in the home that the cluster network serves, dialing only pod, Service
//     and node addresses (egressSelectorConfig).
const (
	nodesCIDR = "172.18.0.0/16"
	// hostIP is the cluster network's address, the first of nodesCIDR.
	hostIP = "172.18.0.1"
	// podCIDR is every node's pods; node i has the i-th /20 of it.
	podCIDR     = "10.244.0.0/16"
	serviceCIDR = "10.96.0.0/16"
	// serviceIP is the `kubernetes` Service's cluster IP, the first of
	// serviceCIDR.
	serviceIP = "10.96.0.1"
	// clusterDNSIP is the kube-dns Service address pods resolve with.
	clusterDNSIP = node.DefaultClusterDNSIP
	// MaxNodes is how many nodes a local cluster may have: podCIDR holds
	// 16 shares of /20, each room for 2480 pods (node/ipam.go).
	MaxNodes = 16
)

// nodeAddress is node i's (0-based) IP and pod CIDR: 172.18.0.2+i and
// 10.244.16i.0/20.
func nodeAddress(i int) (ip, pods string) {
	return fmt.Sprintf("172.18.0.%d", 2+i), fmt.Sprintf("10.244.%d.0/20", 16*i)
}

// nodeName is node i's name: paddlejob-node, then paddlejob-node-2, -3...
func nodeName(i int) string {
	if i == 0 {
		return NodeName
	}
	return fmt.Sprintf("%s-%d", NodeName, i+1)
}

// networkSocket is where nodes attach to the cluster network.
func networkSocket(l layout) string { return filepath.Join(l.home, "network.sock") }

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
	for _, s := range []string{elasticEtcdSocket(l), egressSocket(l), networkSocket(l)} {
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

// forwards are the cluster network's --forward flags: the host endpoints
// pods use, each on the host IP at its own port number.
func forwards(p Ports) []string {
	var out []string
	for _, port := range []int{p.APIServer, p.ElasticEtcd, p.Progress} {
		flag := "--forward"
		if port == p.ElasticEtcd {
			// The guard scopes each pod to its job's keys, and tells
			// pods apart by the address the forward names.
			flag = "--forward-naming-client"
		}
		out = append(out, fmt.Sprintf("%s=%d=127.0.0.1:%d", flag, port, port))
	}
	return out
}

// onHost is the URL of a forwarded host endpoint as pods reach it.
func onHost(scheme string, port int) string { return fmt.Sprintf("%s://%s:%d", scheme, hostIP, port) }

// HostIP is where pods reach the host's forwarded endpoints (the API
// server, the elastic etcd guard, the progress endpoint), each at its port
// of Ports: the cluster network's address.
func (s *State) HostIP() string { return hostIP }

// NodeIPs are the nodes' IPs, in node order.
func (s *State) NodeIPs() []string {
	out := make([]string, s.Settings.nodes())
	for i := range out {
		out[i], _ = nodeAddress(i)
	}
	return out
}

// EgressSocket is where the cluster network serves the API server's egress,
// for tests on the host that reach pods and cluster IPs the way the API
// server does.
func (s *State) EgressSocket() string { return egressSocket(layout{s.Home}) }

// isNode reports whether a component is one of the nodes.
func isNode(component string) bool {
	return component == NodeName || strings.HasPrefix(component, NodeName+"-")
}
