package serviceproxy

import (
	"fmt"
	"net/netip"
	"strings"
)

// DefaultCIDR is the cluster IPs the node serves by default: the local
// cluster's service range, which the node's network namespace routes to
// itself (a local route on lo), so the proxy can bind any address of it.
const DefaultCIDR = "10.96.0.0/16"

// CIDRs is the set of cluster IPs the node serves.
type CIDRs []netip.Prefix

// ParseCIDRs parses a comma-separated list of CIDRs.
func ParseCIDRs(s string) (CIDRs, error) {
	var out CIDRs
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("service CIDR %q: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("service CIDR %q names no range", s)
	}
	return out, nil
}

// Contains reports whether ip, a textual address, lies in one of the ranges.
func (c CIDRs) Contains(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range c {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
