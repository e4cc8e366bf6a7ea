package serviceproxy

import (
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// svc builds a Service; ports are "name:port/PROTO->target".
func svc(ns, name string, typ corev1.ServiceType, clusterIP string, selector map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: typ, ClusterIP: clusterIP, Selector: selector, Ports: ports},
	}
	if clusterIP != "" {
		s.Spec.ClusterIPs = []string{clusterIP}
	}
	return s
}

func sport(name string, port int32, proto corev1.Protocol, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, Protocol: proto, TargetPort: target}
}

func TestServiceListeners(t *testing.T) {
	app := map[string]string{"app": "web"}
	http := sport("http", 80, corev1.ProtocolTCP, intstr.FromInt32(8080))
	tests := []struct {
		name     string
		services []*corev1.Service
		want     []string // "address service/port"
		notes    []string // "service port: reason"
		// family is the address family of listeners, where it matters.
		family map[string]discoveryv1.AddressType
	}{
		{
			name:     "ClusterIP, NodePort and LoadBalancer get their cluster IP served",
			services: []*corev1.Service{svc("a", "c", "", "127.64.0.10", app, http), svc("a", "n", corev1.ServiceTypeNodePort, "127.64.0.11", app, http), svc("a", "l", corev1.ServiceTypeLoadBalancer, "127.64.0.12", app, http)},
			want:     []string{"127.64.0.10:80 a/c/http", "127.64.0.11:80 a/n/http", "127.64.0.12:80 a/l/http"},
		},
		{
			name:     "headless, ExternalName, no IP and other networks are not ours",
			services: []*corev1.Service{svc("a", "headless", "", "None", app, http), svc("a", "ext", corev1.ServiceTypeExternalName, "", nil, http), svc("a", "pending", "", "", app, http), svc("a", "real", "", "10.0.0.12", app, http)},
		},
		{
			name:     "every TCP port; protocol defaults to TCP; UDP and SCTP are noted",
			services: []*corev1.Service{svc("a", "dns", "", "127.64.0.10", app, sport("tcp", 53, "", intstr.FromInt32(5353)), sport("udp", 53, corev1.ProtocolUDP, intstr.FromInt32(5353)), sport("sctp", 99, corev1.ProtocolSCTP, intstr.IntOrString{}), sport("", 8443, corev1.ProtocolTCP, intstr.FromString("https")))},
			want:     []string{"127.64.0.10:53 a/dns/tcp", "127.64.0.10:8443 a/dns/"},
			notes:    []string{"a/dns udp: UDP is not proxied", "a/dns sctp: SCTP is not proxied"},
		},
		{
			name:     "no selector: served too, from EndpointSlices made by hand",
			services: []*corev1.Service{svc("default", "kubernetes", "", "127.64.0.1", nil, sport("https", 443, corev1.ProtocolTCP, intstr.FromInt32(6443)))},
			want:     []string{"127.64.0.1:443 default/kubernetes/https"},
		},
		{
			name: "dual stack: each eligible IP",
			services: []*corev1.Service{func() *corev1.Service {
				s := svc("a", "dual", "", "127.64.0.10", app, http)
				s.Spec.ClusterIPs = []string{"127.64.0.10", "::1", "fd00::10"}
				return s
			}()},
			want:   []string{"127.64.0.10:80 a/dual/http", "[::1]:80 a/dual/http"},
			family: map[string]discoveryv1.AddressType{"127.64.0.10:80": discoveryv1.AddressTypeIPv4, "[::1]:80": discoveryv1.AddressTypeIPv6},
		},
		{
			name:     "an address claimed twice (a stale cache) goes to the first by name",
			services: []*corev1.Service{svc("b", "new", "", "127.64.0.10", app, http), svc("a", "old", "", "127.64.0.10", app, http)},
			want:     []string{"127.64.0.10:80 a/old/http"},
			notes:    []string{"b/new http: 127.64.0.10:80 is taken by Service a/old"},
		},
	}
	eligible := func(ip string) bool {
		return ip == "::1" || loopbackOnly(t)(ip)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, notes := serviceListeners(tc.services, eligible)
			var got []string
			for addr, tg := range want {
				got = append(got, addr+" "+tg.service+"/"+tg.port.Name)
				if tg.namespace+"/"+tg.name != tg.service {
					t.Errorf("%s: namespace %q, name %q", addr, tg.namespace, tg.name)
				}
				if f, ok := tc.family[addr]; ok && tg.family != f {
					t.Errorf("%s: family %s, want %s", addr, tg.family, f)
				}
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("listeners %q, want %q", got, tc.want)
			}
			var gotNotes []string
			for _, n := range notes {
				gotNotes = append(gotNotes, n.service+" "+n.port+": "+n.reason)
			}
			if !reflect.DeepEqual(gotNotes, tc.notes) && len(gotNotes)+len(tc.notes) > 0 {
				t.Errorf("notes %q, want %q", gotNotes, tc.notes)
			}
		})
	}
}
