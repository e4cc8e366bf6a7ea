package podnetwork

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
)

// ipv4Packet is an Ethernet frame holding a minimal IPv4 header from src
// to dst, addressed as a NOARP eth0 addresses it: to and from its own MAC.
func ipv4Packet(src, dst string) []byte {
	f := make([]byte, ethHeaderLen+20)
	copy(f[0:6], uplinkMAC(netip.MustParseAddr(src)))
	copy(f[6:12], uplinkMAC(netip.MustParseAddr(src)))
	binary.BigEndian.PutUint16(f[12:14], 0x0800)
	p := f[ethHeaderLen:]
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:4], 20)
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(p[12:16], s[:])
	copy(p[16:20], d[:])
	return f
}

// frameOf is an Ethernet frame of ethertype carrying payload.
func frameOf(ethertype uint16, payload []byte) []byte {
	f := make([]byte, ethHeaderLen, ethHeaderLen+len(payload))
	binary.BigEndian.PutUint16(f[12:14], ethertype)
	return append(f, payload...)
}

func testClusterConfig() ClusterConfig {
	return ClusterConfig{
		NodesCIDR:    netip.MustParsePrefix("172.18.0.0/16"),
		ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")},
		Nodes: []ClusterNode{
			{IP: netip.MustParseAddr("172.18.0.2"), PodCIDR: netip.MustParsePrefix("10.244.0.0/20")},
			{IP: netip.MustParseAddr("172.18.0.3"), PodCIDR: netip.MustParsePrefix("10.244.16.0/20")},
			{IP: netip.MustParseAddr("172.18.0.4"), PodCIDR: netip.MustParsePrefix("10.244.32.0/20")},
		},
	}
}

func TestRoute(t *testing.T) {
	cfg := testClusterConfig()
	table := routeTable{host: HostIP(cfg.NodesCIDR), nodes: cfg.Nodes, services: cfg.ServiceCIDRs}
	all := func(port) bool { return true }
	notFirst := func(p port) bool { return p != 0 }
	only2 := func(p port) bool { return p == 2 }
	ipv6 := make([]byte, 40)
	ipv6[0] = 0x60
	// An IPv4 header inside a frame of another ethertype is not IPv4.
	ipv4InARP := ipv4Packet("10.244.0.5", "10.244.16.7")
	ipv4InARP[13] = 0x06
	tests := []struct {
		name     string
		packet   []byte
		from     port
		attached func(port) bool
		want     port
	}{
		{"pod to a pod of another node", ipv4Packet("10.244.0.5", "10.244.16.7"), 0, all, 1},
		{"pod to another node's IP", ipv4Packet("10.244.0.5", "172.18.0.3"), 0, all, 1},
		{"node to another node's IP", ipv4Packet("172.18.0.2", "172.18.0.4"), 0, all, 2},
		{"node to the host", ipv4Packet("172.18.0.3", "172.18.0.1"), 1, all, hostPort},
		{"pod to the host", ipv4Packet("10.244.16.9", "172.18.0.1"), 1, all, hostPort},
		{"host to a node", ipv4Packet("172.18.0.1", "172.18.0.3"), hostPort, all, 1},
		{"host to a pod", ipv4Packet("172.18.0.1", "10.244.33.1"), hostPort, all, 2},
		{"host to a node not attached", ipv4Packet("172.18.0.1", "10.244.33.1"), hostPort, notFirst, 2},
		{"host to a pod of a node not attached", ipv4Packet("172.18.0.1", "10.244.0.9"), hostPort, notFirst, dropPort},
		{"host to a service: the first node", ipv4Packet("172.18.0.1", "10.96.0.5"), hostPort, all, 0},
		{"host to a service: the first attached node", ipv4Packet("172.18.0.1", "10.96.0.5"), hostPort, notFirst, 1},
		{"host to a service, no node attached", ipv4Packet("172.18.0.1", "10.96.0.5"), hostPort, func(port) bool { return false }, dropPort},
		{"node to a service: its own, never routed", ipv4Packet("10.244.16.2", "10.96.0.5"), 1, all, dropPort},
		{"a service answering the host", ipv4Packet("10.96.0.5", "172.18.0.1"), 0, all, hostPort},
		{"a service answering another node", ipv4Packet("10.96.0.5", "10.244.16.2"), 0, all, 1},
		{"spoofed: another node's pod", ipv4Packet("10.244.16.2", "172.18.0.1"), 0, all, dropPort},
		{"spoofed: another node's IP", ipv4Packet("172.18.0.3", "172.18.0.1"), 0, all, dropPort},
		{"spoofed: the host's IP", ipv4Packet("172.18.0.1", "10.244.16.2"), 0, all, dropPort},
		{"spoofed: an outside address", ipv4Packet("192.0.2.1", "10.244.16.2"), 0, all, dropPort},
		{"back out of the port it came in", ipv4Packet("10.244.0.5", "10.244.0.6"), 0, all, dropPort},
		{"host to itself", ipv4Packet("172.18.0.1", "172.18.0.1"), hostPort, all, dropPort},
		{"unknown destination", ipv4Packet("10.244.0.5", "192.0.2.1"), 0, all, dropPort},
		{"unknown destination in the nodes CIDR", ipv4Packet("172.18.0.1", "172.18.0.9"), hostPort, all, dropPort},
		{"unknown destination from the host", ipv4Packet("172.18.0.1", "8.8.8.8"), hostPort, all, dropPort},
		{"a node attached alone", ipv4Packet("10.244.32.5", "172.18.0.1"), 2, only2, hostPort},
		{"IPv6", frameOf(0x86dd, ipv6), 0, all, dropPort},
		{"IPv6 in an IPv4 ethertype", frameOf(0x0800, ipv6), 0, all, dropPort},
		{"an IPv4 header in an ARP frame", ipv4InARP, 0, all, dropPort},
		{"a runt", frameOf(0x0800, []byte{0x45, 0, 0}), 0, all, dropPort},
		{"shorter than an Ethernet header", []byte{0, 1, 2}, 0, all, dropPort},
		{"empty", nil, hostPort, all, dropPort},
	}
	for _, tc := range tests {
		if got := table.route(tc.packet, tc.from, tc.attached); got != tc.want {
			t.Errorf("%s: routed to %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestReaddress(t *testing.T) {
	cfg := testClusterConfig()
	table := routeTable{host: HostIP(cfg.NodesCIDR), nodes: cfg.Nodes, services: cfg.ServiceCIDRs}
	for _, tc := range []struct {
		to   port
		want string
	}{
		{1, "0a:59:ac:12:00:03"},
		{hostPort, "0a:59:ac:12:00:01"},
	} {
		f := ipv4Packet("10.244.0.5", "10.244.16.7")
		payload := append([]byte(nil), f[12:]...)
		table.readdress(f, tc.to)
		if got := net.HardwareAddr(f[0:6]).String(); got != tc.want {
			t.Errorf("to port %d: destination MAC %s, want %s (the receiving eth0's)", tc.to, got, tc.want)
		}
		if got := net.HardwareAddr(f[6:12]); !bytes.Equal(got, routerMAC) {
			t.Errorf("to port %d: source MAC %s, want the router's %s", tc.to, got, routerMAC)
		}
		if !bytes.Equal(f[12:], payload) {
			t.Errorf("to port %d: readdressing changed the ethertype or the packet", tc.to)
		}
	}
}
