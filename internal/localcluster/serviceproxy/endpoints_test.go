package serviceproxy

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// endpointSlice is a slice of Service service in namespace ns, of address
// type family, with one port; endpoints come from endpoint().
func endpointSlice(ns, name, service string, family discoveryv1.AddressType, port discoveryv1.EndpointPort, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name},
		AddressType: family,
		Ports:       []discoveryv1.EndpointPort{port},
		Endpoints:   endpoints,
	}
	if service != "" {
		s.Labels = map[string]string{discoveryv1.LabelServiceName: service}
	}
	return s
}

func slicePortOf(name string, port int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}
}

// endpointState is an endpoint's conditions as the EndpointSlice controller
// writes them for a pod.
type endpointState int

const (
	readyPod endpointState = iota
	unreadyPod
	// terminatingServing is a pod being deleted that still passes its
	// readiness checks; terminatingUnready one that no longer does.
	terminatingServing
	terminatingUnready
	// noConditions is a hand-made endpoint that says nothing.
	noConditions
)

// endpoint is an endpoint of pod (empty: none named) at ip.
func endpoint(pod, ip string, state endpointState) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{Addresses: []string{ip}}
	if pod != "" {
		ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: pod}
	}
	switch state {
	case readyPod:
		ep.Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}
	case unreadyPod:
		ep.Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(false), Terminating: ptr.To(false)}
	case terminatingServing:
		ep.Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}
	case terminatingUnready:
		ep.Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(false), Terminating: ptr.To(true)}
	}
	return ep
}

// serviceBackendsCase is a case of TestServiceBackends.
type serviceBackendsCase struct {
	name   string
	slices []*discoveryv1.EndpointSlice
	target *serviceTarget
	want   []string // "name address"
}

func TestServiceBackends(t *testing.T) {
	for _, tc := range append(endpointConditionCases(), endpointPortAndSliceCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range serviceBackends(tc.slices, tc.target) {
				got = append(got, b.name+" "+b.addr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("backends %q, want %q", got, tc.want)
			}
		})
	}
}

// webTarget is port portName of Service ns/web at a cluster IP of family.
func webTarget(portName string, family discoveryv1.AddressType) *serviceTarget {
	return &serviceTarget{service: "ns/web", namespace: "ns", name: "web", family: family,
		port: sport(portName, 80, corev1.ProtocolTCP, intstr.FromString("web"))}
}

// endpointConditionCases: which endpoints serve, by their conditions.
func endpointConditionCases() []serviceBackendsCase {
	v4, http, target := discoveryv1.AddressTypeIPv4, slicePortOf("http", 8080), webTarget
	return []serviceBackendsCase{
		{
			name: "ready endpoints only, sorted by pod name",
			slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "web-1", "web", v4, http,
				endpoint("web-b", "10.244.0.102", readyPod),
				endpoint("web-a", "10.244.0.101", readyPod),
				endpoint("unready", "10.244.0.103", unreadyPod),
				endpoint("leaving", "10.244.0.104", terminatingServing),
				endpoint("gone", "10.244.0.105", terminatingUnready))},
			target: target("http", v4),
			want:   []string{"ns/web-a 10.244.0.101:8080", "ns/web-b 10.244.0.102:8080"},
		},
		{
			name: "no ready endpoint: those serving while they terminate",
			slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "web-1", "web", v4, http,
				endpoint("unready", "10.244.0.103", unreadyPod),
				endpoint("leaving", "10.244.0.104", terminatingServing),
				endpoint("gone", "10.244.0.105", terminatingUnready))},
			target: target("http", v4),
			want:   []string{"ns/leaving 10.244.0.104:8080"},
		},
		{
			name: "none ready or serving: none",
			slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "web-1", "web", v4, http,
				endpoint("unready", "10.244.0.103", unreadyPod),
				endpoint("gone", "10.244.0.105", terminatingUnready))},
			target: target("http", v4),
		},
		{
			name: "a hand-made endpoint without conditions or pod is ready, named by its address",
			slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "by-hand", "web", v4, http,
				endpoint("", "172.18.0.2", noConditions))},
			target: target("http", v4),
			want:   []string{"172.18.0.2:8080 172.18.0.2:8080"},
		},
	}
}

// endpointPortAndSliceCases: which slices and ports serve, and how
// endpoints are read.
func endpointPortAndSliceCases() []serviceBackendsCase {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	http, target := slicePortOf("http", 8080), webTarget
	return []serviceBackendsCase{
		{
			name: "named targetPort: each slice carries its pods' number for the port's name",
			slices: []*discoveryv1.EndpointSlice{
				endpointSlice("ns", "web-1", "web", v4, http, endpoint("a", "10.244.0.101", readyPod)),
				endpointSlice("ns", "web-2", "web", v4, slicePortOf("http", 9000), endpoint("b", "10.244.1.102", readyPod)),
				endpointSlice("ns", "web-3", "web", v4, slicePortOf("metrics", 9090), endpoint("c", "10.244.0.103", readyPod)),
			},
			target: target("http", v4),
			want:   []string{"ns/a 10.244.0.101:8080", "ns/b 10.244.1.102:9000"},
		},
		{
			name: "an unnamed Service port matches the unnamed slice port only",
			slices: []*discoveryv1.EndpointSlice{
				endpointSlice("ns", "web-1", "web", v4, slicePortOf("", 8080), endpoint("a", "10.244.0.101", readyPod)),
				endpointSlice("ns", "web-2", "web", v4, http, endpoint("b", "10.244.0.102", readyPod)),
			},
			target: target("", v4),
			want:   []string{"ns/a 10.244.0.101:8080"},
		},
		{
			name: "slice ports of another protocol or without a number do not serve",
			slices: []*discoveryv1.EndpointSlice{
				endpointSlice("ns", "udp", "web", v4, discoveryv1.EndpointPort{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolUDP)}, endpoint("a", "10.244.0.101", readyPod)),
				endpointSlice("ns", "all-ports", "web", v4, discoveryv1.EndpointPort{Name: ptr.To("http")}, endpoint("b", "10.244.0.102", readyPod)),
				endpointSlice("ns", "default-protocol", "web", v4, discoveryv1.EndpointPort{Name: ptr.To("http"), Port: ptr.To[int32](8080)}, endpoint("c", "10.244.0.103", readyPod)),
			},
			target: target("http", v4),
			want:   []string{"ns/c 10.244.0.103:8080"},
		},
		{
			name: "several slices: other Services', unlabelled and other namespaces' are left out; an endpoint in two counts once",
			slices: []*discoveryv1.EndpointSlice{
				endpointSlice("ns", "web-1", "web", v4, http, endpoint("a", "10.244.0.101", readyPod), endpoint("b", "10.244.0.102", readyPod)),
				endpointSlice("ns", "web-2", "web", v4, http, endpoint("b", "10.244.0.102", readyPod), endpoint("c", "10.244.0.103", readyPod)),
				endpointSlice("ns", "db-1", "db", v4, http, endpoint("db", "10.244.0.110", readyPod)),
				endpointSlice("ns", "stray", "", v4, http, endpoint("stray", "10.244.0.111", readyPod)),
				endpointSlice("other", "web-1", "web", v4, http, endpoint("elsewhere", "10.244.0.112", readyPod)),
			},
			target: target("http", v4),
			want:   []string{"ns/a 10.244.0.101:8080", "ns/b 10.244.0.102:8080", "ns/c 10.244.0.103:8080"},
		},
		{
			name: "dual stack: the IPv6 and FQDN slices do not serve an IPv4 cluster IP",
			slices: []*discoveryv1.EndpointSlice{
				endpointSlice("ns", "web-v4", "web", v4, http, endpoint("a", "10.244.0.101", readyPod)),
				endpointSlice("ns", "web-v6", "web", v6, http, endpoint("a", "fd00:10:244::101", readyPod)),
				endpointSlice("ns", "web-fqdn", "web", discoveryv1.AddressTypeFQDN, http, endpoint("", "web.example.com", noConditions)),
				// A slice that says IPv4 but holds an IPv6 address.
				endpointSlice("ns", "mislabelled", "web", v4, http, endpoint("b", "fd00:10:244::102", readyPod)),
			},
			target: target("http", v4),
			want:   []string{"ns/a 10.244.0.101:8080"},
		},
		{
			name: "an IPv6 cluster IP is served by IPv6 slices only",
			slices: []*discoveryv1.EndpointSlice{
				endpointSlice("ns", "web-v4", "web", v4, http, endpoint("a", "10.244.0.101", readyPod)),
				endpointSlice("ns", "web-v6", "web", v6, http, endpoint("a", "fd00:10:244::101", readyPod)),
			},
			target: target("http", v6),
			want:   []string{"ns/a [fd00:10:244::101]:8080"},
		},
		{
			name: "an endpoint's first address is its address",
			slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "web-1", "web", v4, http,
				discoveryv1.Endpoint{Addresses: []string{"10.244.0.101", "10.244.0.201"}, TargetRef: &corev1.ObjectReference{Namespace: "ns", Name: "a"}},
				discoveryv1.Endpoint{TargetRef: &corev1.ObjectReference{Name: "no-address"}})},
			target: target("http", v4),
			want:   []string{"ns/a 10.244.0.101:8080"},
		},
	}
}
