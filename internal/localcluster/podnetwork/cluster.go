package podnetwork

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
)

// ClusterConfig is the addressing of the cluster network: the nodes'
// network and what lies behind each node.
type ClusterConfig struct {
	// NodesCIDR is the nodes' network (172.18.0.0/16); the cluster network
	// holds its first address, HostIP.
	NodesCIDR netip.Prefix
	// ServiceCIDRs are routed to the first attached node (in Nodes order),
	// whose Service proxy serves them.
	ServiceCIDRs []netip.Prefix
	// Nodes are every node that may attach.
	Nodes []ClusterNode
}

// ClusterNode is a node as the cluster network routes to it.
type ClusterNode struct {
	// IP is the node's InternalIP, in NodesCIDR, not HostIP.
	IP netip.Addr
	// PodCIDR is the node's pods; disjoint from the other nodes'.
	PodCIDR netip.Prefix
}

// HostIP is the cluster network's address: the first of nodesCIDR, as a
// docker bridge's gateway is the first of its network.
func HostIP(nodesCIDR netip.Prefix) netip.Addr { return nodesCIDR.Masked().Addr().Next() }

// Check reports what is wrong with the addressing, naming the field.
func (c ClusterConfig) Check() error {
	if !isIPv4Network(c.NodesCIDR) {
		return fmt.Errorf("nodes CIDR %q: want an IPv4 network of at least 4 addresses, such as 172.18.0.0/16", c.NodesCIDR)
	}
	for _, s := range c.ServiceCIDRs {
		if !s.IsValid() || !s.Addr().Is4() || s.Overlaps(c.NodesCIDR) {
			return fmt.Errorf("service CIDR %q: want an IPv4 network apart from the nodes CIDR %s, such as 10.96.0.0/16", s, c.NodesCIDR)
		}
	}
	if len(c.Nodes) == 0 {
		return errors.New("nodes: want at least one node")
	}
	for i, n := range c.Nodes {
		if err := c.checkNode(i, n); err != nil {
			return err
		}
	}
	return nil
}

func (c ClusterConfig) checkNode(i int, n ClusterNode) error {
	if !n.IP.Is4() || !c.NodesCIDR.Contains(n.IP) || n.IP == HostIP(c.NodesCIDR) || n.IP == c.NodesCIDR.Masked().Addr() {
		return fmt.Errorf("nodes[%d] IP %q: want an address of the nodes CIDR %s other than its first two (%s is the cluster network's)",
			i, n.IP, c.NodesCIDR, HostIP(c.NodesCIDR))
	}
	if !isIPv4Network(n.PodCIDR) || n.PodCIDR.Overlaps(c.NodesCIDR) {
		return fmt.Errorf("nodes[%d] pod CIDR %q: want an IPv4 network of at least 4 addresses apart from the nodes CIDR %s, such as 10.244.0.0/20",
			i, n.PodCIDR, c.NodesCIDR)
	}
	for _, s := range c.ServiceCIDRs {
		if s.Overlaps(n.PodCIDR) {
			return fmt.Errorf("nodes[%d] pod CIDR %s overlaps the service CIDR %s", i, n.PodCIDR, s)
		}
	}
	for j, other := range c.Nodes[:i] {
		if other.IP == n.IP {
			return fmt.Errorf("nodes[%d] IP %s: nodes[%d] has it too", i, n.IP, j)
		}
		if other.PodCIDR.Overlaps(n.PodCIDR) {
			return fmt.Errorf("nodes[%d] pod CIDR %s overlaps nodes[%d]'s %s", i, n.PodCIDR, j, other.PodCIDR)
		}
	}
	return nil
}

// ClusterNetwork plays the host of the nodes' network, as the docker
// bridge's gateway does for kind: a namespace of its own holding HostIP on
// its eth0, where the local cluster's forwards listen and the API server's
// egress dials. It routes IPv4 frames in userspace between eth0's wire
// and the nodes' uplinks, packet sockets handed over a Unix socket (Serve,
// AttachNode): no link and no capability crosses a namespace boundary, so
// it works the same for a normal user whose every process is in a user
// namespace of its own.
type ClusterNetwork struct {
	cfg    ClusterConfig
	table  routeTable
	ns     *Namespace
	handle *netlink.Handle
	host   *os.File // the packet socket on the cluster network's own wire

	mu      sync.Mutex
	closed  bool
	uplinks []*uplink // by node, nil when not attached; copied on change
	// current is uplinks as the routers read it, without the lock.
	current atomic.Pointer[[]*uplink]
	wg      sync.WaitGroup // routers and attachments
}

// uplink is an attached node's packet socket and the connection that
// attached it.
type uplink struct {
	file *os.File
	conn net.Conn
}

func (u *uplink) close() {
	u.file.Close()
	u.conn.Close()
}

// NewClusterNetwork creates the cluster network's namespace, its eth0 and
// routes, and starts routing. Nodes attach through Serve.
func NewClusterNetwork(cfg ClusterConfig) (*ClusterNetwork, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	ns, err := New()
	if err != nil {
		return nil, err
	}
	c := &ClusterNetwork{
		cfg:   cfg,
		table: routeTable{host: HostIP(cfg.NodesCIDR), nodes: cfg.Nodes, services: cfg.ServiceCIDRs},
		ns:    ns,
	}
	c.publish(make([]*uplink, len(cfg.Nodes)))
	if err := c.setUp(); err != nil {
		c.Close()
		return nil, fmt.Errorf("setting up the cluster network's namespace: %w", err)
	}
	c.wg.Add(1)
	go c.forward(hostPort, c.host)
	return c, nil
}

func (c *ClusterNetwork) setUp() error {
	h, err := c.ns.netlinkHandle()
	if err != nil {
		return err
	}
	c.handle = h
	if _, err := upLoopback(h); err != nil {
		return err
	}
	addr := netip.PrefixFrom(HostIP(c.cfg.NodesCIDR), c.cfg.NodesCIDR.Bits())
	f, link, err := addUplink(c.ns, h, addr)
	if err != nil {
		return err
	}
	c.host = f
	for _, n := range c.cfg.Nodes {
		if err := routeVia(h, link, n.PodCIDR); err != nil {
			return err
		}
	}
	for _, s := range c.cfg.ServiceCIDRs {
		if err := routeVia(h, link, s); err != nil {
			return err
		}
	}
	// The forwards of the API server and the rest listen on their
	// machine's ports, some below 1024.
	return c.ns.Do(allowUnprivilegedPorts)
}

// forward routes every frame read from the port's packet socket until it
// is closed. A failed write (a node's wire gone) drops that frame.
func (c *ClusterNetwork) forward(from port, f *os.File) {
	defer c.wg.Done()
	buf := make([]byte, ethHeaderLen+UplinkMTU+1)
	for {
		n, err := f.Read(buf)
		if err != nil {
			return // closed: detached, or the cluster network closed
		}
		frame := buf[:n]
		uplinks := *c.current.Load()
		to := c.table.route(frame, from, func(p port) bool { return uplinks[p] != nil })
		if to == dropPort {
			continue
		}
		c.table.readdress(frame, to)
		if to == hostPort {
			_, _ = c.host.Write(frame)
		} else {
			_, _ = uplinks[to].file.Write(frame)
		}
	}
}

// attach routes to node i through file from now on, in place of any
// earlier attachment of the node, until detach.
func (c *ClusterNetwork) attach(i port, u *uplink) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("the cluster network is closing")
	}
	old := c.uplinks[i]
	c.setUplink(i, u)
	c.wg.Add(1)
	c.mu.Unlock()
	if old != nil {
		// A restarted node attached again before its old connection
		// ended: the old socket goes, and with it the old namespace.
		old.close()
	}
	go c.forward(i, u.file)
	return nil
}

// detach stops routing to node i through u (if it is still the node's
// uplink) and closes u: the node's namespace is held by its packet
// socket, so it must not outlive the node's attachment.
func (c *ClusterNetwork) detach(i port, u *uplink) {
	c.mu.Lock()
	if c.uplinks[i] == u {
		c.setUplink(i, nil)
	}
	c.mu.Unlock()
	u.close()
}

// setUplink publishes a copy of the uplinks with node i's set to u. The
// caller holds mu.
func (c *ClusterNetwork) setUplink(i port, u *uplink) {
	next := append([]*uplink(nil), c.uplinks...)
	next[i] = u
	c.publish(next)
}

// publish makes uplinks the routers' view; it is never written again. The
// caller holds mu, or is NewClusterNetwork.
func (c *ClusterNetwork) publish(uplinks []*uplink) {
	c.uplinks = uplinks
	c.current.Store(&uplinks)
}

// nodeIndex is the port of the node with ip, or dropPort.
func (c *ClusterNetwork) nodeIndex(ip netip.Addr) port {
	for i, n := range c.cfg.Nodes {
		if n.IP == ip {
			return port(i)
		}
	}
	return dropPort
}

// Namespace is the cluster network's namespace, valid until Close: the
// forwards listen in it, on HostIP, and the API server's egress dials
// from it.
func (c *ClusterNetwork) Namespace() *Namespace { return c.ns }

// Attached is the IPs of the nodes attached now, in Nodes order.
func (c *ClusterNetwork) Attached() []netip.Addr {
	var ips []netip.Addr
	for i, u := range *c.current.Load() {
		if u != nil {
			ips = append(ips, c.cfg.Nodes[i].IP)
		}
	}
	return ips
}

// Close stops routing, drops every uplink (closing the cluster network's
// copies of the nodes' packet sockets and their connections) and releases the
// namespace. Serve's listener is the caller's to close.
func (c *ClusterNetwork) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	uplinks := c.uplinks
	c.publish(make([]*uplink, len(c.cfg.Nodes)))
	c.mu.Unlock()
	for _, u := range uplinks {
		if u != nil {
			u.close()
		}
	}
	if c.host != nil {
		c.host.Close()
	}
	c.wg.Wait()
	if c.handle != nil {
		c.handle.Close()
	}
	return c.ns.Close()
}
