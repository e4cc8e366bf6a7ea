package serviceproxy

import (
	"net"
	"net/netip"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// serviceTarget is what one listener forwards to: a port of a Service, at
// one of its cluster IPs.
type serviceTarget struct {
	// service is namespace/name.
	service   string
	namespace string
	name      string
	port      corev1.ServicePort
	// family is the address type of the cluster IP; only endpoints of the
	// same family serve it.
	family discoveryv1.AddressType
}

// serviceNote says why a Service's port gets no listener. verbose notes are
// logged at V(1) only.
type serviceNote struct {
	service, port, reason string
	verbose               bool
}

func (n serviceNote) key() string { return n.service + "|" + n.port + "|" + n.reason }

// serviceListeners works out the listeners the Services call for, by address
// (clusterIP:port): one per TCP port of each cluster IP that eligible
// accepts, for Services of type ClusterIP, NodePort and LoadBalancer, with
// a selector or without one (their EndpointSlices are made by hand). notes
// say which ports are left out and why, when that is worth saying.
func serviceListeners(services []*corev1.Service, eligible func(ip string) bool) (map[string]*serviceTarget, []serviceNote) {
	sorted := append([]*corev1.Service(nil), services...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	want := map[string]*serviceTarget{}
	var notes []serviceNote
	for _, svc := range sorted {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		var ours []netip.Addr
		for _, ip := range ips {
			// Headless Services ("None") have no address to serve; others are
			// on a network this node is not part of.
			if ip == "" || ip == corev1.ClusterIPNone || !eligible(ip) {
				continue
			}
			if a, err := netip.ParseAddr(ip); err == nil {
				ours = append(ours, a.Unmap())
			}
		}
		if len(ours) == 0 {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		for _, sp := range svc.Spec.Ports {
			portName := sp.Name
			if portName == "" {
				portName = strconv.Itoa(int(sp.Port))
			}
			if proto := protocolOf(sp.Protocol); proto != corev1.ProtocolTCP {
				notes = append(notes, serviceNote{service: key, port: portName, reason: string(proto) + " is not proxied"})
				continue
			}
			for _, ip := range ours {
				addr := net.JoinHostPort(ip.String(), strconv.Itoa(int(sp.Port)))
				if other, taken := want[addr]; taken {
					notes = append(notes, serviceNote{service: key, port: portName, reason: addr + " is taken by Service " + other.service})
					continue
				}
				want[addr] = &serviceTarget{
					service:   key,
					namespace: svc.Namespace,
					name:      svc.Name,
					port:      sp,
					family:    addressFamily(ip),
				}
			}
		}
	}
	return want, notes
}

func addressFamily(a netip.Addr) discoveryv1.AddressType {
	if a.Is4() {
		return discoveryv1.AddressTypeIPv4
	}
	return discoveryv1.AddressTypeIPv6
}

func protocolOf(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}
