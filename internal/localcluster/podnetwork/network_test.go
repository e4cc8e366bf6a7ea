package podnetwork

import (
	"net/netip"
	"strings"
	"testing"
)

func TestNodeConfigCheck(t *testing.T) {
	good := NodeConfig{
		PodCIDR:      netip.MustParsePrefix("10.244.0.0/16"),
		NodeIP:       netip.MustParseAddr("172.18.0.2"),
		NodesCIDR:    netip.MustParsePrefix("172.18.0.0/16"),
		ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")},
	}
	tests := []struct {
		name    string
		change  func(*NodeConfig)
		wantErr string // "" for none
	}{
		{"the defaults", func(*NodeConfig) {}, ""},
		{"no pod CIDR", func(c *NodeConfig) { c.PodCIDR = netip.Prefix{} }, "pod CIDR"},
		{"an IPv6 pod CIDR", func(c *NodeConfig) { c.PodCIDR = netip.MustParsePrefix("fd00::/64") }, "pod CIDR"},
		{"a /31", func(c *NodeConfig) { c.PodCIDR = netip.MustParsePrefix("10.0.0.0/31") }, "pod CIDR"},
		{"a loopback node IP", func(c *NodeConfig) { c.NodeIP = netip.MustParseAddr("127.0.0.1") }, "not loopback"},
		{"a node IP in the pod CIDR", func(c *NodeConfig) { c.NodeIP = netip.MustParseAddr("10.244.0.5") }, "lies in the pod CIDR"},
		{"a service CIDR over the pods'", func(c *NodeConfig) { c.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} }, "overlaps"},
		{"a service CIDR holding the node IP", func(c *NodeConfig) { c.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("172.18.0.0/24")} }, "overlaps"},
		{"a service CIDR over the other nodes' pods", func(c *NodeConfig) {
			c.PodCIDR, c.ClusterPodCIDR = netip.MustParsePrefix("10.244.16.0/20"), netip.MustParsePrefix("10.0.0.0/8")
			c.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}
		}, "overlaps"},
		{"this node's share of the cluster's pods", func(c *NodeConfig) {
			c.PodCIDR, c.ClusterPodCIDR = netip.MustParsePrefix("10.244.16.0/20"), netip.MustParsePrefix("10.244.0.0/16")
		}, ""},
		{"a cluster pod CIDR not holding the node's", func(c *NodeConfig) { c.ClusterPodCIDR = netip.MustParsePrefix("10.245.0.0/16") }, "cluster pod CIDR"},
		{"a cluster pod CIDR narrower than the node's", func(c *NodeConfig) { c.ClusterPodCIDR = netip.MustParsePrefix("10.244.0.0/20") }, "cluster pod CIDR"},
		{"an IPv6 cluster pod CIDR", func(c *NodeConfig) { c.ClusterPodCIDR = netip.MustParsePrefix("fd00::/8") }, "cluster pod CIDR"},
		{"a node IP in another node's pods", func(c *NodeConfig) {
			c.PodCIDR, c.ClusterPodCIDR = netip.MustParsePrefix("10.244.16.0/20"), netip.MustParsePrefix("10.0.0.0/8")
			c.NodeIP, c.NodesCIDR = netip.MustParseAddr("10.1.0.2"), netip.MustParsePrefix("10.1.0.0/16")
		}, "lies in the pod CIDR"},
		{"no nodes CIDR", func(c *NodeConfig) { c.NodesCIDR = netip.Prefix{} }, "nodes CIDR"},
		{"a nodes CIDR over the pods'", func(c *NodeConfig) { c.NodesCIDR = netip.MustParsePrefix("0.0.0.0/0") }, "nodes CIDR"},
		{"a nodes CIDR without the node IP", func(c *NodeConfig) { c.NodesCIDR = netip.MustParsePrefix("172.19.0.0/16") }, "node IP"},
		{"the cluster network's IP", func(c *NodeConfig) { c.NodeIP = netip.MustParseAddr("172.18.0.1") }, "cluster network's"},
		{"the nodes CIDR's network address", func(c *NodeConfig) { c.NodeIP = netip.MustParseAddr("172.18.0.0") }, "node IP"},
	}
	for _, tc := range tests {
		cfg := good
		tc.change(&cfg)
		err := cfg.Check()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestGatewayAndNames(t *testing.T) {
	if got := Gateway(netip.MustParsePrefix("10.244.7.9/16")); got != netip.MustParseAddr("10.244.0.1") {
		t.Errorf("Gateway = %s, want 10.244.0.1", got)
	}
	ip := netip.MustParseAddr("10.244.255.254")
	if got := hostLinkName(ip); got != "veth0af4fffe" || len(got) > 15 {
		t.Errorf("hostLinkName(%s) = %q", ip, got)
	}
	if got := podMAC(ip).String(); got != "0a:58:0a:f4:ff:fe" {
		t.Errorf("podMAC(%s) = %s", ip, got)
	}
}

func TestParseCIDRs(t *testing.T) {
	got, err := ParseCIDRs(" 10.96.0.1/16 ,, 192.168.0.0/24")
	if err != nil || len(got) != 2 || got[0].String() != "10.96.0.0/16" || got[1].String() != "192.168.0.0/24" {
		t.Errorf("ParseCIDRs = %v, %v", got, err)
	}
	for _, bad := range []string{"10.96.0.1", "fd00::/64", "x"} {
		if _, err := ParseCIDRs(bad); err == nil {
			t.Errorf("ParseCIDRs(%q) succeeded", bad)
		}
	}
}
