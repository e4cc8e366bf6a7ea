package launcher

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// selfAddress finds this pod's address among its peers when POD_IP is not
// given: the IP of the peer named like this host (a pod's hostname is its
// name), else the first local interface address that is a peer's (covers
// hostNetwork and renamed hosts; loopback counts because a local process
// node gives pods 127.0.0.N).
func selfAddress(hostname string, peers []corev1.Pod, interfaceAddrs []netip.Addr) (netip.Addr, error) {
	peerAddrs := make([]netip.Addr, 0, len(peers))
	for _, p := range peers {
		addr, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil {
			continue // trainerOrder reports it
		}
		if hostname != "" && p.Name == hostname {
			return addr.Unmap(), nil
		}
		peerAddrs = append(peerAddrs, addr.Unmap())
	}
	for _, addr := range interfaceAddrs {
		if slices.Contains(peerAddrs, addr.Unmap()) {
			return addr.Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("cannot tell which pod this is: POD_IP is not set, no pod is named %q, and no local address (%s) is a pod IP of the job (%s); set POD_IP from status.podIP",
		hostname, joinAddrs(interfaceAddrs), joinAddrs(peerAddrs))
}

// localAddrs lists this host's interface addresses.
func localAddrs() ([]netip.Addr, error) {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing interface addresses: %w", err)
	}
	var addrs []netip.Addr
	for _, a := range ifAddrs {
		if ipNet, ok := a.(*net.IPNet); ok {
			if addr, ok := netip.AddrFromSlice(ipNet.IP); ok {
				addrs = append(addrs, addr.Unmap())
			}
		}
	}
	return addrs, nil
}
