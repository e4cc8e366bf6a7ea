package podnetwork

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestClusterConfigCheck(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*ClusterConfig)
		wantErr string // "" for none
	}{
		{"three nodes", func(*ClusterConfig) {}, ""},
		{"no service CIDR", func(c *ClusterConfig) { c.ServiceCIDRs = nil }, ""},
		{"no nodes CIDR", func(c *ClusterConfig) { c.NodesCIDR = netip.Prefix{} }, "nodes CIDR"},
		{"an IPv6 nodes CIDR", func(c *ClusterConfig) { c.NodesCIDR = netip.MustParsePrefix("fd00::/64") }, "nodes CIDR"},
		{"a /31 nodes CIDR", func(c *ClusterConfig) { c.NodesCIDR = netip.MustParsePrefix("172.18.0.0/31") }, "nodes CIDR"},
		{"no nodes", func(c *ClusterConfig) { c.Nodes = nil }, "nodes: want at least one"},
		{"a service CIDR over the nodes'", func(c *ClusterConfig) { c.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("172.0.0.0/8")} }, "service CIDR"},
		{"an IPv6 service CIDR", func(c *ClusterConfig) { c.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("fd00::/108")} }, "service CIDR"},
		{"a node IP outside", func(c *ClusterConfig) { c.Nodes[1].IP = netip.MustParseAddr("172.19.0.3") }, "nodes[1] IP"},
		{"a node at the host IP", func(c *ClusterConfig) { c.Nodes[2].IP = netip.MustParseAddr("172.18.0.1") }, "nodes[2] IP"},
		{"a node without IP", func(c *ClusterConfig) { c.Nodes[0].IP = netip.Addr{} }, "nodes[0] IP"},
		{"two nodes of one IP", func(c *ClusterConfig) { c.Nodes[2].IP = c.Nodes[0].IP }, "nodes[0] has it too"},
		{"overlapping pod CIDRs", func(c *ClusterConfig) { c.Nodes[1].PodCIDR = netip.MustParsePrefix("10.244.0.0/16") }, "overlaps nodes[0]"},
		{"a pod CIDR over the services'", func(c *ClusterConfig) { c.Nodes[1].PodCIDR = netip.MustParsePrefix("10.96.0.0/20") }, "overlaps the service CIDR"},
		{"a pod CIDR over the nodes'", func(c *ClusterConfig) { c.Nodes[1].PodCIDR = netip.MustParsePrefix("172.18.16.0/20") }, "nodes[1] pod CIDR"},
		{"no pod CIDR", func(c *ClusterConfig) { c.Nodes[2].PodCIDR = netip.Prefix{} }, "nodes[2] pod CIDR"},
	}
	for _, tc := range tests {
		cfg := testClusterConfig()
		tc.change(&cfg)
		err := cfg.Check()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.wantErr)
		}
	}
	if got := HostIP(netip.MustParsePrefix("172.18.5.0/16")); got != netip.MustParseAddr("172.18.0.1") {
		t.Errorf("HostIP = %s, want 172.18.0.1", got)
	}
}

func TestHelloAndReply(t *testing.T) {
	ip := netip.MustParseAddr("172.18.0.2")
	line := encodeHello(ip)
	if string(line) != `{"nodeIP":"172.18.0.2"}`+"\n" {
		t.Errorf("encodeHello = %q", line)
	}
	if got, err := decodeHello(line); err != nil || got != ip {
		t.Errorf("decodeHello(%q) = %s, %v", line, got, err)
	}
	for _, bad := range []string{"", "172.18.0.2\n", `{"nodeIP":"fd00::1"}`, `{"nodeIP":"x"}`, `{}`} {
		if _, err := decodeHello([]byte(bad)); err == nil || !strings.Contains(err.Error(), "hello") {
			t.Errorf("decodeHello(%q): %v, want an error naming the hello", bad, err)
		}
	}
	if err := decodeReply(encodeReply(nil)); err != nil {
		t.Errorf("an ok reply decoded as %v", err)
	}
	err := decodeReply(encodeReply(errors.New("node IP 172.18.0.9 is not one of the cluster's nodes")))
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "172.18.0.9") {
		t.Errorf("an error reply decoded as %v", err)
	}
	if err := decodeReply([]byte("ok\n")); err == nil {
		t.Error("a reply that is not JSON decoded as ok")
	}
}
