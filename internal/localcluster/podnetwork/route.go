package podnetwork

import (
	"net"
	"net/netip"
)

// port is where the cluster network's router reads and writes frames: a
// node's uplink, numbered by the node's place in ClusterConfig.Nodes, or
// the cluster network's own eth0.
type port int

const (
	// hostPort is the cluster network's own eth0, holding HostIP.
	hostPort port = -1
	// dropPort is the decision to drop a packet.
	dropPort port = -2
)

// routeTable is what the router decides by: the cluster's addressing, fixed
// for the cluster network's life.
type routeTable struct {
	host     netip.Addr
	nodes    []ClusterNode
	services []netip.Prefix
}

// ipv4Addresses returns the source and destination of the IPv4 packet an
// Ethernet frame carries; ok is false for anything else (IPv6, ARP, a runt).
func ipv4Addresses(frame []byte) (src, dst netip.Addr, ok bool) {
	if len(frame) < ethHeaderLen+20 || frame[12] != 0x08 || frame[13] != 0x00 {
		return src, dst, false
	}
	packet := frame[ethHeaderLen:]
	if packet[0]>>4 != 4 {
		return src, dst, false
	}
	return netip.AddrFrom4([4]byte(packet[12:16])), netip.AddrFrom4([4]byte(packet[16:20])), true
}

// mac is the eth0 MAC of port p: a node's, or the cluster network's.
func (t *routeTable) mac(p port) net.HardwareAddr {
	if p == hostPort {
		return uplinkMAC(t.host)
	}
	return uplinkMAC(t.nodes[p].IP)
}

// readdress addresses frame to port to's eth0, from the router: the
// receiving eth0 drops a frame addressed to another MAC (PACKET_OTHERHOST).
func (t *routeTable) readdress(frame []byte, to port) {
	copy(frame[0:6], t.mac(to))
	copy(frame[6:12], routerMAC)
}

// route decides where a frame read from port from goes. attached tells
// whether node i's uplink is there now. The rules:
//   - IPv4 in Ethernet only;
//   - a node's packet must come from its IP, its pods or a Service IP (its
//     Service proxy answering), else it is spoofed;
//   - HostIP goes to the host; a node's IP or pod goes to that node; a
//     Service IP from the host goes to the first attached node, whose
//     Service proxy serves it (a node has Service IPs local: none of its
//     packets to one comes here);
//   - never back out of the port it came in by; anything else is dropped.
func (t *routeTable) route(frame []byte, from port, attached func(port) bool) port {
	src, dst, ok := ipv4Addresses(frame)
	if !ok {
		return dropPort
	}
	if from != hostPort && !t.mayBeSentBy(from, src) {
		return dropPort
	}
	to := t.destination(dst, from, attached)
	if to == from {
		return dropPort
	}
	return to
}

func (t *routeTable) destination(dst netip.Addr, from port, attached func(port) bool) port {
	if dst == t.host {
		return hostPort
	}
	if i := t.nodeOf(dst); i != dropPort {
		if !attached(i) {
			return dropPort
		}
		return i
	}
	if from == hostPort && t.isService(dst) {
		for i := range t.nodes {
			if attached(port(i)) {
				return port(i)
			}
		}
	}
	return dropPort
}

// mayBeSentBy: src is node's IP, one of its pods or a Service IP.
func (t *routeTable) mayBeSentBy(node port, src netip.Addr) bool {
	n := t.nodes[node]
	return src == n.IP || n.PodCIDR.Contains(src) || t.isService(src)
}

// nodeOf is the node whose IP or pod addr is, or dropPort.
func (t *routeTable) nodeOf(addr netip.Addr) port {
	for i, n := range t.nodes {
		if addr == n.IP || n.PodCIDR.Contains(addr) {
			return port(i)
		}
	}
	return dropPort
}

func (t *routeTable) isService(addr netip.Addr) bool {
	for _, s := range t.services {
		if s.Contains(addr) {
			return true
		}
	}
	return false
}
