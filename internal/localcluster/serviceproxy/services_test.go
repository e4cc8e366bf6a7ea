package serviceproxy

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
			name:     "no selector: noted, not served",
			services: []*corev1.Service{svc("default", "kubernetes", "", "127.64.0.1", nil, sport("https", 443, corev1.ProtocolTCP, intstr.FromInt32(6443)))},
			notes:    []string{"default/kubernetes : no selector: its endpoints are managed by hand, the node does not know them"},
		},
		{
			name: "dual stack: each eligible IP",
			services: []*corev1.Service{func() *corev1.Service {
				s := svc("a", "dual", "", "127.64.0.10", app, http)
				s.Spec.ClusterIPs = []string{"127.64.0.10", "::1", "fd00::10"}
				return s
			}()},
			want: []string{"127.64.0.10:80 a/dual/http", "[::1]:80 a/dual/http"},
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
				if tg.namespace != strings.Split(tg.service, "/")[0] {
					t.Errorf("%s: namespace %q", addr, tg.namespace)
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

// backendPod is a running, Ready pod of namespace ns with an IP.
func backendPod(ns, name, ip string, lbls map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Ports: ports}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

func TestServiceBackends(t *testing.T) {
	web := map[string]string{"app": "web", "tier": "front"}
	target := func(tp intstr.IntOrString, publishNotReady bool) *serviceTarget {
		return &serviceTarget{service: "ns/web", namespace: "ns", selector: labels.SelectorFromSet(map[string]string{"app": "web"}),
			port: sport("http", 80, corev1.ProtocolTCP, tp), publishNotReady: publishNotReady}
	}
	modify := func(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }
	now := metav1.Now()
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		target *serviceTarget
		want   []string
	}{
		{
			name: "selector and namespace, sorted by name",
			pods: []*corev1.Pod{
				backendPod("ns", "web-b", "127.0.1.2", web),
				backendPod("ns", "web-a", "127.0.1.1", web),
				backendPod("ns", "db", "127.0.1.3", map[string]string{"app": "db"}),
				backendPod("other", "web-c", "127.0.1.4", web),
				backendPod("ns", "unlabelled", "127.0.1.5", nil),
			},
			target: target(intstr.FromInt32(8080), false),
			want:   []string{"ns/web-a 127.0.1.1:8080", "ns/web-b 127.0.1.2:8080"},
		},
		{
			name: "only running, Ready, not terminating pods with an IP",
			pods: []*corev1.Pod{
				backendPod("ns", "ok", "127.0.1.1", web),
				modify(backendPod("ns", "pending", "127.0.1.2", web), func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
				modify(backendPod("ns", "done", "127.0.1.3", web), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				modify(backendPod("ns", "unready", "127.0.1.4", web), func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }),
				modify(backendPod("ns", "no-conditions", "127.0.1.5", web), func(p *corev1.Pod) { p.Status.Conditions = nil }),
				modify(backendPod("ns", "terminating", "127.0.1.6", web), func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
				backendPod("ns", "no-ip", "", web),
			},
			target: target(intstr.FromInt32(8080), false),
			want:   []string{"ns/ok 127.0.1.1:8080"},
		},
		{
			name: "publishNotReadyAddresses admits unready pods, not terminating ones",
			pods: []*corev1.Pod{
				modify(backendPod("ns", "unready", "127.0.1.4", web), func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }),
				modify(backendPod("ns", "terminating", "127.0.1.6", web), func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
			},
			target: target(intstr.FromInt32(8080), true),
			want:   []string{"ns/unready 127.0.1.4:8080"},
		},
		{
			name:   "no targetPort: the Service port",
			pods:   []*corev1.Pod{backendPod("ns", "a", "127.0.1.1", web)},
			target: target(intstr.IntOrString{}, false),
			want:   []string{"ns/a 127.0.1.1:80"},
		},
		{
			name: "named targetPort: each pod's own number; pods without it are left out",
			pods: []*corev1.Pod{
				backendPod("ns", "a", "127.0.1.1", web, corev1.ContainerPort{Name: "metrics", ContainerPort: 9090}, corev1.ContainerPort{Name: "web", ContainerPort: 8080}),
				backendPod("ns", "b", "127.0.1.2", web, corev1.ContainerPort{Name: "web", ContainerPort: 9000, Protocol: corev1.ProtocolTCP}),
				backendPod("ns", "udp", "127.0.1.3", web, corev1.ContainerPort{Name: "web", ContainerPort: 9000, Protocol: corev1.ProtocolUDP}),
				backendPod("ns", "none", "127.0.1.4", web),
			},
			target: target(intstr.FromString("web"), false),
			want:   []string{"ns/a 127.0.1.1:8080", "ns/b 127.0.1.2:9000"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range serviceBackends(tc.pods, tc.target) {
				got = append(got, b.pod+" "+b.addr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("backends %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTargetPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP}}},
		{Name: "b", Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 5354}, {Name: "https", ContainerPort: 9443}}},
	}}}
	tests := []struct {
		port   corev1.ServicePort
		want   int32
		wantOK bool
	}{
		{sport("", 443, "", intstr.FromInt32(9443)), 9443, true},
		{sport("", 443, "", intstr.IntOrString{}), 443, true},
		{sport("", 443, "", intstr.FromString("https")), 9443, true},
		{sport("", 53, corev1.ProtocolTCP, intstr.FromString("dns")), 5354, true},
		{sport("", 53, corev1.ProtocolUDP, intstr.FromString("dns")), 5353, true},
		{sport("", 443, "", intstr.FromString("missing")), 0, false},
	}
	for _, tc := range tests {
		got, ok := targetPort(pod, tc.port)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s %s: got %d %v, want %d %v", tc.port.Protocol, tc.port.TargetPort.String(), got, ok, tc.want, tc.wantOK)
		}
	}
}
