package serviceproxy

import (
	"net"
	"net/netip"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// serviceBackend is an endpoint that serves a Service's port.
type serviceBackend struct {
	// name is the endpoint's pod, namespace/name, or its address when the
	// endpoint names no pod (a hand-made EndpointSlice).
	name string
	addr string // IP:port
}

// serviceBackends picks the endpoints that serve a target from the
// EndpointSlices of its namespace, as kube-proxy does:
//   - slices labelled kubernetes.io/service-name with the Service's name,
//     of the cluster IP's address family (an IPv6 slice of a dual-stack
//     Service does not serve its IPv4 address, nor FQDN slices any);
//   - the slice's port named as the Service port (the controller has
//     resolved a named targetPort for each pod: pods that number it
//     differently are in different slices), TCP, with a number;
//   - endpoints that are ready (a missing condition counts as ready); when
//     none is, those still serving while they terminate, so that a Service
//     whose last pods are shutting down keeps answering.
//
// An endpoint's first address is its address; one listed twice (in two
// slices while the controller moves it) counts once. Backends are sorted by
// name, then address: the order round-robin follows.
func serviceBackends(slices []*discoveryv1.EndpointSlice, t *serviceTarget) []serviceBackend {
	var ready, terminating []serviceBackend
	seen := map[string]bool{}
	for _, slice := range slices {
		if slice.Namespace != t.namespace || slice.Labels[discoveryv1.LabelServiceName] != t.name || slice.AddressType != t.family {
			continue
		}
		port, ok := slicePort(slice, t.port)
		if !ok {
			continue
		}
		for _, ep := range slice.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			a, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil || addressFamily(a.Unmap()) != t.family {
				continue
			}
			addr := net.JoinHostPort(a.Unmap().String(), strconv.Itoa(int(port)))
			if seen[addr] {
				continue
			}
			b := serviceBackend{name: endpointName(ep, slice.Namespace, addr), addr: addr}
			switch {
			case endpointReady(ep.Conditions):
				seen[addr] = true
				ready = append(ready, b)
			case endpointServingWhileTerminating(ep.Conditions):
				terminating = append(terminating, b)
			}
		}
	}
	out := ready
	if len(out) == 0 {
		out = dedupe(terminating)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return out[i].addr < out[j].addr
	})
	return out
}

// slicePort is the number of the slice's port that serves the Service port:
// the one of the same name (both may be unnamed) and protocol.
func slicePort(slice *discoveryv1.EndpointSlice, sp corev1.ServicePort) (int32, bool) {
	for _, p := range slice.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == sp.Name && proto == protocolOf(sp.Protocol) && p.Port != nil && *p.Port > 0 {
			return *p.Port, true
		}
	}
	return 0, false
}

// endpointReady: the API documents a missing ready condition as ready.
func endpointReady(c discoveryv1.EndpointConditions) bool {
	return c.Ready == nil || *c.Ready
}

// endpointServingWhileTerminating: a terminating endpoint whose pod still
// passes its readiness checks.
func endpointServingWhileTerminating(c discoveryv1.EndpointConditions) bool {
	return c.Terminating != nil && *c.Terminating && c.Serving != nil && *c.Serving
}

func endpointName(ep discoveryv1.Endpoint, namespace, addr string) string {
	if r := ep.TargetRef; r != nil && r.Name != "" {
		if r.Namespace != "" {
			namespace = r.Namespace
		}
		return namespace + "/" + r.Name
	}
	return addr
}

func dedupe(backends []serviceBackend) []serviceBackend {
	seen := map[string]bool{}
	var out []serviceBackend
	for _, b := range backends {
		if !seen[b.addr] {
			seen[b.addr] = true
			out = append(out, b)
		}
	}
	return out
}
