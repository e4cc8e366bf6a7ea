package serviceproxy

import (
	"net/netip"
	"strings"
	"testing"
)

// loopbackOnly is eligible for the cluster IPs of the unit tests: loopback
// addresses, which the host's network has without a route of the tests'.
func loopbackOnly(t testing.TB) func(string) bool {
	t.Helper()
	return CIDRs{netip.MustParsePrefix("127.0.0.0/8")}.Contains
}

func TestCIDRsContains(t *testing.T) {
	tests := []struct {
		in  string
		in4 []string
		out []string
	}{
		{in: DefaultCIDR, in4: []string{"10.96.0.1", "10.96.255.254"}, out: []string{"10.97.0.1", "10.244.0.101", "172.18.0.2", "127.0.0.1"}},
		{in: "127.0.0.0/8", in4: []string{"127.0.0.1", "127.64.0.10", "::ffff:127.1.2.3"}, out: []string{"10.0.0.1", "::1", "None", "", "junk"}},
		{in: "127.64.0.1/16", in4: []string{"127.64.200.1"}, out: []string{"127.65.0.1"}},
		{in: "127.0.0.0/8, ::1/128", in4: []string{"::1", "127.0.0.2"}, out: []string{"::2"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var c CIDRs
			for _, p := range strings.Split(tc.in, ",") {
				c = append(c, netip.MustParsePrefix(strings.TrimSpace(p)))
			}
			for _, ip := range tc.in4 {
				if !c.Contains(ip) {
					t.Errorf("%s not in %s", ip, tc.in)
				}
			}
			for _, ip := range tc.out {
				if c.Contains(ip) {
					t.Errorf("%s in %s", ip, tc.in)
				}
			}
		})
	}
}
