package podnetwork

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Names of the node namespace's links, as a CNI bridge plugin and a node's
// first interface are named on a cluster.
const (
	BridgeName = "cni0"
	// NodeLinkName is the node's uplink: one end of a veth pair whose
	// other end is WireLinkName.
	NodeLinkName = "eth0"
	// PodLinkName is a pod's end of its veth pair, inside the pod.
	PodLinkName = "eth0"
)

// bridgeMAC is the bridge's fixed address: a bridge otherwise takes the
// lowest address of its ports, so the pods' gateway would change its MAC as
// pods come and go. Locally administered, unicast.
var bridgeMAC = net.HardwareAddr{0x02, 0x70, 0x6a, 0x00, 0x00, 0x01}

// NodeConfig is the addressing of a node's network.
type NodeConfig struct {
	// PodCIDR is this node's pods' network; the bridge has its first
	// address, the pods' gateway.
	PodCIDR netip.Prefix
	// ClusterPodCIDR holds every node's pods, routed over the uplink
	// (eth0); PodCIDR lies in it. The zero value is PodCIDR itself: one
	// node.
	ClusterPodCIDR netip.Prefix
	// NodeIP is the node's InternalIP, on the uplink eth0: its own
	// listeners, and hostNetwork pods, are there.
	NodeIP netip.Addr
	// NodesCIDR is the nodes' network (172.18.0.0/16): NodeIP sits on eth0
	// with its prefix length, and the cluster network has its first
	// address (HostIP).
	NodesCIDR netip.Prefix
	// ServiceCIDRs are made local to the services namespace (a local route
	// on its lo), so that a listener there may bind any cluster IP; the
	// node's namespace routes them to it.
	ServiceCIDRs []netip.Prefix
}

// Gateway is the pods' default gateway in podCIDR: its first address.
func Gateway(podCIDR netip.Prefix) netip.Addr { return podCIDR.Masked().Addr().Next() }

// ServicesIP is the services namespace's address in podCIDR: its second,
// which no pod is given (pods get only last octets 100-254).
func ServicesIP(podCIDR netip.Prefix) netip.Addr { return Gateway(podCIDR).Next() }

// clusterPodCIDR is ClusterPodCIDR, or PodCIDR when it is not set.
func (c NodeConfig) clusterPodCIDR() netip.Prefix {
	if c.ClusterPodCIDR == (netip.Prefix{}) {
		return c.PodCIDR.Masked()
	}
	return c.ClusterPodCIDR.Masked()
}

// Check reports what is wrong with the addressing, naming the field.
func (c NodeConfig) Check() error {
	if !isIPv4Network(c.PodCIDR) {
		return fmt.Errorf("pod CIDR %q: want an IPv4 network of at least 4 addresses, such as 10.244.0.0/16", c.PodCIDR)
	}
	if c.ClusterPodCIDR != (netip.Prefix{}) {
		cluster := c.ClusterPodCIDR
		if !isIPv4Network(cluster) || cluster.Bits() > c.PodCIDR.Bits() || !cluster.Contains(c.PodCIDR.Addr()) {
			return fmt.Errorf("cluster pod CIDR %q: want an IPv4 network holding the pod CIDR %s, such as 10.244.0.0/16", cluster, c.PodCIDR)
		}
	}
	if !c.NodeIP.Is4() || c.NodeIP.IsLoopback() || c.NodeIP.IsUnspecified() {
		return fmt.Errorf("node IP %q: want an IPv4 address that is not loopback, such as 172.18.0.2", c.NodeIP)
	}
	if c.clusterPodCIDR().Contains(c.NodeIP) {
		return fmt.Errorf("node IP %s lies in the pod CIDR %s", c.NodeIP, c.clusterPodCIDR())
	}
	if !isIPv4Network(c.NodesCIDR) || c.NodesCIDR.Overlaps(c.clusterPodCIDR()) {
		return fmt.Errorf("nodes CIDR %q: want an IPv4 network of at least 4 addresses apart from the pods', such as 172.18.0.0/16", c.NodesCIDR)
	}
	if !c.NodesCIDR.Contains(c.NodeIP) || c.NodeIP == HostIP(c.NodesCIDR) || c.NodeIP == c.NodesCIDR.Masked().Addr() {
		return fmt.Errorf("node IP %s: want an address of the nodes CIDR %s other than its first two (%s is the cluster network's)",
			c.NodeIP, c.NodesCIDR, HostIP(c.NodesCIDR))
	}
	for _, s := range c.ServiceCIDRs {
		if !s.IsValid() || !s.Addr().Is4() {
			return fmt.Errorf("service CIDR %q: want an IPv4 network such as 10.96.0.0/16", s)
		}
		if s.Overlaps(c.clusterPodCIDR()) || s.Overlaps(c.NodesCIDR) {
			return fmt.Errorf("service CIDR %s overlaps the pod CIDR %s or the nodes CIDR %s", s, c.clusterPodCIDR(), c.NodesCIDR)
		}
	}
	return nil
}

// isIPv4Network: an IPv4 prefix of at least 4 addresses.
func isIPv4Network(p netip.Prefix) bool {
	return p.IsValid() && p.Addr().Is4() && p.Bits() <= 30
}

// NodeNetwork is a node's network namespace: lo, the uplink eth0 holding
// the node IP, and the bridge the pods' veth pairs hang off, holding their
// gateway; and the services namespace, on that bridge like a pod.
//
// The services namespace holds the service CIDRs (local on its lo) and is
// where the node's listeners for pods belong: the Service proxy and the
// cluster DNS server. It is not the node's namespace because hostNetwork
// pods run there: in a namespace of its own, no pod can bind a cluster IP
// (in the node's namespace a cluster IP is no local address; IP_FREEBIND
// binds it but receives nothing, since its packets are forwarded), join a
// listener's SO_REUSEPORT group, or squat a Service's port first.
//
// The uplink is a packet socket bound to eth0's peer, eth0-wire: what the
// node's namespace routes over eth0 (the nodes' network, every node's pods)
// is read from it as Ethernet frames, and what is written to it arrives on
// eth0. The node hands the socket to the cluster network (AttachNode),
// which routes between the nodes in userspace; nothing else links the
// namespace to anything. Unlike a tun it needs no device file, only
// CAP_NET_RAW in the namespace's user namespace.
type NodeNetwork struct {
	cfg    NodeConfig
	ns     *Namespace
	handle *netlink.Handle
	bridge netlink.Link
	uplink *os.File
	// services is the services namespace, a pod of ServicesIP.
	services *Pod
}

// NewNodeNetwork creates the node's namespace and its links.
func NewNodeNetwork(cfg NodeConfig) (*NodeNetwork, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	ns, err := New()
	if err != nil {
		return nil, err
	}
	n := &NodeNetwork{cfg: cfg, ns: ns}
	if err := n.setUp(); err != nil {
		n.Close()
		return nil, fmt.Errorf("setting up the node's network namespace: %w", err)
	}
	return n, nil
}

func (n *NodeNetwork) setUp() error {
	h, err := n.ns.netlinkHandle()
	if err != nil {
		return err
	}
	n.handle = h
	if _, err := upLoopback(h); err != nil {
		return err
	}
	if err := n.setUpBridge(); err != nil {
		return err
	}
	if err := n.setUpUplink(); err != nil {
		return err
	}
	if err := n.setUpServices(); err != nil {
		return err
	}
	// With forwarding off, a packet for an address no route leads to is
	// dropped without a word, and a pod dialing outside the cluster waits
	// for its connect timeout; with it on, the node answers "network
	// unreachable" at once. No route leads anywhere but the cluster's
	// networks. The uplink forwards what other nodes send to the pods.
	return n.ns.Do(func() error {
		for _, link := range []string{BridgeName, NodeLinkName} {
			if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+link+"/forwarding", []byte("1"), 0); err != nil {
				return err
			}
		}
		return allowUnprivilegedPorts()
	})
}

func (n *NodeNetwork) setUpBridge() error {
	h := n.handle
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.HardwareAddr, attrs.MTU = BridgeName, bridgeMAC, UplinkMTU
	br := &netlink.Bridge{LinkAttrs: attrs}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("adding the bridge %s: %w", BridgeName, err)
	}
	gw := netip.PrefixFrom(Gateway(n.cfg.PodCIDR), n.cfg.PodCIDR.Bits())
	if err := h.AddrAdd(br, &netlink.Addr{IPNet: prefixNet(gw)}); err != nil {
		return fmt.Errorf("gateway %s on %s: %w", gw, BridgeName, err)
	}
	if err := h.LinkSetUp(br); err != nil {
		return fmt.Errorf("%s up: %w", BridgeName, err)
	}
	var err error
	n.bridge, err = h.LinkByName(BridgeName)
	return err
}

// setUpServices makes the services namespace, at ServicesIP on the bridge,
// with the service CIDRs local to it, and routes them there from the
// node's namespace.
func (n *NodeNetwork) setUpServices() error {
	p, err := n.addPod(ServicesIP(n.cfg.PodCIDR))
	if err != nil {
		return fmt.Errorf("the services namespace: %w", err)
	}
	n.services = p
	h, err := p.ns.netlinkHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("finding lo in the services namespace: %w", err)
	}
	via := net.IP(ServicesIP(n.cfg.PodCIDR).AsSlice())
	for _, s := range n.cfg.ServiceCIDRs {
		// AnyIP: every address of the CIDR is local, as 127.0.0.0/8 is.
		r := &netlink.Route{Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: unix.RT_SCOPE_HOST,
			LinkIndex: lo.Attrs().Index, Dst: prefixNet(s.Masked())}
		if err := h.RouteReplace(r); err != nil {
			return fmt.Errorf("local route for the service CIDR %s: %w", s, err)
		}
		if err := n.handle.RouteReplace(&netlink.Route{LinkIndex: n.bridge.Attrs().Index, Dst: prefixNet(s.Masked()), Gw: via}); err != nil {
			return fmt.Errorf("route for the service CIDR %s via the services namespace %s: %w", s, via, err)
		}
	}
	return nil
}

// setUpUplink adds eth0 holding the node IP (its address routes the nodes'
// network) and its wire, and routes the other nodes' pods over it.
func (n *NodeNetwork) setUpUplink() error {
	addr := netip.PrefixFrom(n.cfg.NodeIP, n.cfg.NodesCIDR.Bits())
	f, link, err := addUplink(n.ns, n.handle, addr)
	if err != nil {
		return err
	}
	n.uplink = f
	if cluster := n.cfg.clusterPodCIDR(); cluster != n.cfg.PodCIDR.Masked() {
		// The bridge's own, longer route keeps this node's pods on it.
		return routeVia(n.handle, link, cluster)
	}
	return nil
}

// allowUnprivilegedPorts lets every process of the calling thread's network
// namespace bind any port, as container runtimes set it in a pod's: a port
// below 1024 guards nothing in a namespace of the pod's own, and the node's
// Service proxy binds Services' low ports (a webhook's 443) without
// CAP_NET_BIND_SERVICE, which a normal user's node does not have.
func allowUnprivilegedPorts() error {
	return os.WriteFile("/proc/sys/net/ipv4/ip_unprivileged_port_start", []byte("0"), 0)
}

// Uplink is the packet socket on eth0's wire, valid until Close: the node
// hands it to the cluster network (AttachNode). The NodeNetwork owns and
// closes it.
func (n *NodeNetwork) Uplink() *os.File { return n.uplink }

// Namespace is the node's network namespace, valid until Close: hostNetwork
// pods run in it, and the node's dials to pods are made from it.
func (n *NodeNetwork) Namespace() *Namespace { return n.ns }

// ServicesNamespace is the services namespace, valid until Close: the
// node's listeners for pods (the Service proxy, the cluster DNS server),
// on cluster IPs, and the proxy's dials to endpoints are made in it.
func (n *NodeNetwork) ServicesNamespace() *Namespace { return n.services.ns }

// Config is the network's addressing.
func (n *NodeNetwork) Config() NodeConfig { return n.cfg }

// Close releases the node's namespace and its uplink; the namespace goes
// once the pods' namespaces, every socket in it and every other copy of
// the uplink's socket (the cluster network's) are gone too.
func (n *NodeNetwork) Close() error {
	if n.services != nil {
		n.services.Close()
	}
	if n.handle != nil {
		n.handle.Close()
	}
	if n.uplink != nil {
		n.uplink.Close()
	}
	return n.ns.Close()
}

// Pod is a pod's network namespace, linked to the node's bridge by a veth
// pair: lo, and eth0 with the pod's IP and a default route via the gateway.
type Pod struct {
	node     *NodeNetwork
	ns       *Namespace
	ip       netip.Addr
	hostLink string
}

// AddPod creates a pod's namespace with ip, an address of the pod CIDR.
func (n *NodeNetwork) AddPod(ip netip.Addr) (*Pod, error) {
	if !n.cfg.PodCIDR.Contains(ip) || ip == Gateway(n.cfg.PodCIDR) || ip == n.cfg.PodCIDR.Masked().Addr() || ip == ServicesIP(n.cfg.PodCIDR) {
		return nil, fmt.Errorf("pod IP %s: not a pod address of %s", ip, n.cfg.PodCIDR)
	}
	return n.addPod(ip)
}

// addPod creates a namespace on the bridge with ip.
func (n *NodeNetwork) addPod(ip netip.Addr) (*Pod, error) {
	ns, err := New()
	if err != nil {
		return nil, err
	}
	p := &Pod{node: n, ns: ns, ip: ip, hostLink: hostLinkName(ip)}
	if err := p.setUp(); err != nil {
		p.Close()
		return nil, fmt.Errorf("setting up the network of pod IP %s: %w", ip, err)
	}
	return p, nil
}

// hostLinkName names a pod's veth end on the bridge after its IP: unique
// among live pods, at most 15 bytes.
func hostLinkName(ip netip.Addr) string {
	b := ip.As4()
	return fmt.Sprintf("veth%02x%02x%02x%02x", b[0], b[1], b[2], b[3])
}

// podMAC is 0a:58 and the IP's four bytes: locally administered, unicast.
func podMAC(ip netip.Addr) net.HardwareAddr {
	b := ip.As4()
	return net.HardwareAddr{0x0a, 0x58, b[0], b[1], b[2], b[3]}
}

func (p *Pod) setUp() error {
	nh := p.node.handle
	veth := &netlink.Veth{
		// Both ends take the MTU from LinkAttrs.
		LinkAttrs: netlink.LinkAttrs{Name: p.hostLink, MasterIndex: p.node.bridge.Attrs().Index, MTU: UplinkMTU},
		PeerName:  PodLinkName,
		// A pod's MAC follows from its IP, so that a peer's neighbour entry
		// for a released address stays right for the next pod given it.
		PeerHardwareAddr: podMAC(p.ip),
		PeerNamespace:    netlink.NsFd(int(p.ns.Fd())),
	}
	err := nh.LinkAdd(veth)
	if errors.Is(err, unix.EEXIST) {
		// Left by a pod of the same IP whose release failed.
		if old, lerr := nh.LinkByName(p.hostLink); lerr == nil {
			_ = nh.LinkDel(old)
		}
		err = nh.LinkAdd(veth)
	}
	if err != nil {
		return fmt.Errorf("adding the veth pair %s/%s: %w", p.hostLink, PodLinkName, err)
	}
	if err := nh.LinkSetUp(veth); err != nil {
		return fmt.Errorf("%s up: %w", p.hostLink, err)
	}

	h, err := p.ns.netlinkHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	if _, err := upLoopback(h); err != nil {
		return err
	}
	eth, err := h.LinkByName(PodLinkName)
	if err != nil {
		return fmt.Errorf("finding %s in the pod: %w", PodLinkName, err)
	}
	addr := netip.PrefixFrom(p.ip, p.node.cfg.PodCIDR.Bits())
	if err := h.AddrAdd(eth, &netlink.Addr{IPNet: prefixNet(addr)}); err != nil {
		return fmt.Errorf("pod IP %s on %s: %w", addr, PodLinkName, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("%s up: %w", PodLinkName, err)
	}
	gw := Gateway(p.node.cfg.PodCIDR)
	if err := h.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.IP(gw.AsSlice())}); err != nil {
		return fmt.Errorf("default route via %s: %w", gw, err)
	}
	if err := p.ns.Do(allowUnprivilegedPorts); err != nil {
		return fmt.Errorf("letting the pod bind ports below 1024: %w", err)
	}
	return p.awaitBridgePort()
}

// awaitBridgePort waits for the kernel to see the veth's carrier, which it
// does asynchronously (up to a second later): until then the bridge drops
// the pod's frames, and a pod's first connection would wait a SYN
// retransmission.
func (p *Pod) awaitBridgePort() error {
	deadline := time.Now().Add(carrierTimeout)
	for {
		l, err := p.node.handle.LinkByName(p.hostLink)
		if err != nil {
			return err
		}
		if l.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still %s after %s", p.hostLink, l.Attrs().OperState, carrierTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// carrierTimeout bounds the wait for a veth's carrier.
const carrierTimeout = 5 * time.Second

// Namespace is the pod's network namespace, valid until Close.
func (p *Pod) Namespace() *Namespace { return p.ns }

// IP is the pod's address.
func (p *Pod) IP() netip.Addr { return p.ip }

// Close removes the pod's veth pair and releases its namespace, which goes
// with the last of its processes and sockets.
func (p *Pod) Close() error {
	var errs []error
	if l, err := p.node.handle.LinkByName(p.hostLink); err == nil {
		if err := p.node.handle.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("removing %s: %w", p.hostLink, err))
		}
	}
	errs = append(errs, p.ns.Close())
	return errors.Join(errs...)
}

// netlinkHandle is a route netlink handle whose socket is in ns, so that it
// acts on ns's links from any thread.
func (ns *Namespace) netlinkHandle() (*netlink.Handle, error) {
	var h *netlink.Handle
	err := ns.Do(func() error {
		var err error
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("opening netlink in a network namespace: %w", err)
	}
	return h, nil
}

func upLoopback(h *netlink.Handle) (netlink.Link, error) {
	lo, err := h.LinkByName("lo")
	if err != nil {
		return nil, fmt.Errorf("finding lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return nil, fmt.Errorf("lo up: %w", err)
	}
	return lo, nil
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// ParseCIDRs parses comma-separated IPv4 CIDRs ("" is none).
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("%q is not an IPv4 CIDR such as 10.96.0.0/16", part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
