package clusternetwork

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-logr/logr"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

// Config configures the cluster network.
type Config struct {
	// NodesCIDR is the nodes' network; the cluster network has its first
	// address (podnetwork.HostIP), where it serves Forwards.
	NodesCIDR netip.Prefix
	// PodCIDR is every node's pods, ServiceCIDRs the cluster IPs: with the
	// nodes' IPs, what the egress dials.
	PodCIDR      netip.Prefix
	ServiceCIDRs []netip.Prefix
	// Nodes are the nodes that may attach.
	Nodes []Node
	// Forwards are what pods reach of the host, on the host address.
	Forwards []Forward
	// Socket is where nodes attach their uplinks.
	Socket string
	// EgressSocket, when set, is where the API server's egress is served.
	EgressSocket string
	Log          logr.Logger
}

// Node is a node of the cluster network.
type Node struct {
	IP      netip.Addr
	PodCIDR netip.Prefix
	// KubeletPort is the node's kubelet API port, which listens on the
	// host's loopback: the egress leads IP:KubeletPort there; unless
	// KubeletInNode.
	KubeletPort int
	// KubeletInNode says the kubelet API listens on IP itself, in the
	// node's network namespace (the container-runtime node's kubelet): the
	// egress reaches it over the node's uplink.
	KubeletInNode bool
}

// kubeletInNode is the last field of a --node whose kubelet listens in
// the node's network namespace.
const kubeletInNode = "kubelet-in-node"

func (n Node) String() string {
	s := fmt.Sprintf("%s,%s,%d", n.IP, n.PodCIDR, n.KubeletPort)
	if n.KubeletInNode {
		s += "," + kubeletInNode
	}
	return s
}

// ParseNode reads a node as --node takes it: IP,POD-CIDR,KUBELET-PORT
// (e.g. 172.18.0.2,10.244.0.0/20,10250), and ",kubelet-in-node" when its
// kubelet listens on IP in the node's network namespace.
func ParseNode(s string) (Node, error) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	inNode := len(parts) == 4 && parts[3] == kubeletInNode
	if inNode {
		parts = parts[:3]
	}
	if len(parts) != 3 {
		return Node{}, fmt.Errorf("node %q: want IP,POD-CIDR,KUBELET-PORT[,%s] such as 172.18.0.2,10.244.0.0/20,10250", s, kubeletInNode)
	}
	ip, err := netip.ParseAddr(parts[0])
	if err != nil || !ip.Is4() {
		return Node{}, fmt.Errorf("node %q: IP %q is not an IPv4 address", s, parts[0])
	}
	cidr, err := netip.ParsePrefix(parts[1])
	if err != nil || !cidr.Addr().Is4() {
		return Node{}, fmt.Errorf("node %q: pod CIDR %q is not an IPv4 CIDR", s, parts[1])
	}
	port, err := strconv.Atoi(parts[2])
	if err != nil || port < 1 || port > 65535 {
		return Node{}, fmt.Errorf("node %q: kubelet port %q is not 1-65535", s, parts[2])
	}
	return Node{IP: ip, PodCIDR: cidr.Masked(), KubeletPort: port, KubeletInNode: inNode}, nil
}

// Run serves the cluster network until ctx ends: it routes between the
// nodes that attach, and serves the forwards and the egress.
func Run(ctx context.Context, cfg Config) error {
	if err := checkForwards(cfg.Forwards); err != nil {
		return err
	}
	log := cfg.Log
	netCfg := podnetwork.ClusterConfig{NodesCIDR: cfg.NodesCIDR, ServiceCIDRs: cfg.ServiceCIDRs}
	var nodeIPs []netip.Addr
	hostTargets := map[netip.AddrPort]string{}
	for _, n := range cfg.Nodes {
		netCfg.Nodes = append(netCfg.Nodes, podnetwork.ClusterNode{IP: n.IP, PodCIDR: n.PodCIDR})
		nodeIPs = append(nodeIPs, n.IP)
		// The process node's kubelet API is on the host's loopback, out of
		// pods' reach.
		if !n.KubeletInNode {
			hostTargets[netip.AddrPortFrom(n.IP, uint16(n.KubeletPort))] = "127.0.0.1:" + strconv.Itoa(n.KubeletPort)
		}
	}
	cn, err := podnetwork.NewClusterNetwork(netCfg)
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EPERM) {
			hint = " (creating a network namespace takes CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_NET_RAW: run it as root, or in a user namespace of its own, as paddlejob up does)"
		}
		return fmt.Errorf("creating the cluster network: %w%s", err, hint)
	}
	defer cn.Close()
	host := podnetwork.HostIP(cfg.NodesCIDR)
	fw, err := startForwarders(log.WithName("forward"), cn.Namespace(), host.String(), cfg.Forwards)
	if err != nil {
		return err
	}
	defer fw.stop()
	if cfg.EgressSocket != "" {
		policy := newEgressPolicy(cfg.PodCIDR, cfg.ServiceCIDRs, nodeIPs...)
		e, err := startEgress(log.WithName("egress"), cn.Namespace(), policy, hostTargets, cfg.EgressSocket)
		if err != nil {
			return err
		}
		defer e.stop()
		log.Info("Serving the API server's egress into the cluster network", "socket", cfg.EgressSocket, "reaches", policy.String())
	}
	// Listening last: the attach socket's existence says the rest is served.
	ln, err := listenUnix(cfg.Socket, "cluster network")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- cn.Serve(ln) }()
	log.Info("Cluster network ready", "hostIP", host, "nodes", len(cfg.Nodes), "socket", cfg.Socket)
	select {
	case <-ctx.Done():
		ln.Close()
		<-served
		return nil
	case err := <-served:
		return fmt.Errorf("serving the nodes' attachments: %w", err)
	}
}
