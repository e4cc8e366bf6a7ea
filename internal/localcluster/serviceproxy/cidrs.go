package serviceproxy

import (
	"net/netip"
)

// DefaultCIDR is the cluster IPs the node serves by default: the local
// cluster's service range, which is local to the node's services namespace
// (a local route on its lo), so the proxy can bind any address of it.
const DefaultCIDR = "10.96.0.0/16"

// CIDRs is the set of cluster IPs the node serves.
type CIDRs []netip.Prefix

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
