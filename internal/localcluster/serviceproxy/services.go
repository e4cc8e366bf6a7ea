package serviceproxy

import (
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serviceTarget is what one listener forwards to: a port of a Service.
type serviceTarget struct {
	// service is namespace/name.
	service   string
	namespace string
	selector  labels.Selector
	port      corev1.ServicePort
	// publishNotReady admits pods that are not Ready, as
	// spec.publishNotReadyAddresses does for endpoints.
	publishNotReady bool
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
// accepts, for Services of type ClusterIP, NodePort and LoadBalancer that
// have a selector. notes say which ports are left out and why, when that is
// worth saying.
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
		var ours []string
		for _, ip := range ips {
			// Headless Services ("None") have no address to serve; others are
			// on a network this node is not part of.
			if ip != "" && ip != corev1.ClusterIPNone && eligible(ip) {
				ours = append(ours, ip)
			}
		}
		if len(ours) == 0 {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		if len(svc.Spec.Selector) == 0 {
			notes = append(notes, serviceNote{service: key, reason: "no selector: its endpoints are managed by hand, the node does not know them", verbose: true})
			continue
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
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
				addr := net.JoinHostPort(ip, strconv.Itoa(int(sp.Port)))
				if other, taken := want[addr]; taken {
					notes = append(notes, serviceNote{service: key, port: portName, reason: addr + " is taken by Service " + other.service})
					continue
				}
				want[addr] = &serviceTarget{
					service:         key,
					namespace:       svc.Namespace,
					selector:        selector,
					port:            sp,
					publishNotReady: svc.Spec.PublishNotReadyAddresses,
				}
			}
		}
	}
	return want, notes
}

func protocolOf(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// serviceBackend is a pod that serves a Service's port.
type serviceBackend struct {
	pod  string // namespace/name
	addr string // podIP:targetPort
}

// serviceBackends picks the pods that serve a target: pods of its namespace
// that its selector matches, running, Ready (unless publishNotReady), not
// being deleted, with an IP and the target port. They are sorted by name, the
// order round-robin follows.
func serviceBackends(pods []*corev1.Pod, t *serviceTarget) []serviceBackend {
	var out []serviceBackend
	for _, pod := range pods {
		if pod.Namespace != t.namespace || !t.selector.Matches(labels.Set(pod.Labels)) || !podServes(pod, t.publishNotReady) {
			continue
		}
		port, ok := targetPort(pod, t.port)
		if !ok {
			continue
		}
		out = append(out, serviceBackend{pod: pod.Namespace + "/" + pod.Name, addr: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port)))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pod < out[j].pod })
	return out
}

// podServes reports whether a pod can take a Service's connections.
func podServes(pod *corev1.Pod, evenUnready bool) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return false
	}
	if evenUnready {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort is the pod's port a Service port forwards to: targetPort's
// number, or the TCP container port of targetPort's name, or else the
// Service port itself. ok is false when the pod has no port of that name.
func targetPort(pod *corev1.Pod, sp corev1.ServicePort) (port int32, ok bool) {
	tp := sp.TargetPort
	switch {
	case tp.Type == intstr.String && tp.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == tp.StrVal && protocolOf(cp.Protocol) == protocolOf(sp.Protocol) {
					return cp.ContainerPort, true
				}
			}
		}
		return 0, false
	case tp.Type == intstr.Int && tp.IntVal != 0:
		return tp.IntVal, true
	}
	return sp.Port, true
}
