package launcher

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// activePods drops the pods that are no longer members of the job: those
// being deleted and those that finished, such as the failed predecessor of a
// restarted pod.
func activePods(pods []corev1.Pod) []corev1.Pod {
	var active []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		active = append(active, p)
	}
	return active
}

// hasAddress reports whether a pod can be a peer: Running, with a pod IP.
func hasAddress(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
}

// peerState is what the launcher knows of its job's pods at one moment.
type peerState struct {
	expected int
	ready    []corev1.Pod // Running with an IP
	waiting  []corev1.Pod // active, not yet ready
}

// observePeers classifies a job's pods against the expected count.
func observePeers(pods []corev1.Pod, expected int) peerState {
	s := peerState{expected: expected}
	for _, p := range activePods(pods) {
		if hasAddress(&p) {
			s.ready = append(s.ready, p)
		} else {
			s.waiting = append(s.waiting, p)
		}
	}
	byName := func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(s.ready, byName)
	slices.SortFunc(s.waiting, byName)
	return s
}

// complete reports whether exactly the expected pods are all ready. More
// active pods than expected means a replaced pod has not gone yet, so the
// membership is not settled.
func (s peerState) complete() bool {
	return len(s.waiting) == 0 && len(s.ready) == s.expected
}

// String says who is missing, e.g. "2 of 3 pods are running with an IP;
// waiting for: job-x7k2p (Pending), 1 pod not created yet".
func (s peerState) String() string {
	active := len(s.ready) + len(s.waiting)
	head := fmt.Sprintf("%d of %d pods are running with an IP", len(s.ready), s.expected)
	if active > s.expected {
		names := make([]string, 0, active)
		for _, p := range append(slices.Clone(s.ready), s.waiting...) {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		return fmt.Sprintf("%s; %d pods are active but parallelism is %d, waiting for the extra ones to finish: %s",
			head, active, s.expected, strings.Join(names, ", "))
	}
	var missing []string
	for _, p := range s.waiting {
		missing = append(missing, fmt.Sprintf("%s (%s)", p.Name, podCondition(&p)))
	}
	switch notCreated := s.expected - active; {
	case notCreated == 1:
		missing = append(missing, "1 pod not created yet")
	case notCreated > 1:
		missing = append(missing, fmt.Sprintf("%d pods not created yet", notCreated))
	}
	if len(missing) == 0 {
		return head
	}
	return head + "; waiting for: " + strings.Join(missing, ", ")
}

// podCondition describes why a pod is not ready yet.
func podCondition(p *corev1.Pod) string {
	phase := string(p.Status.Phase)
	if phase == "" {
		phase = "no status yet"
	}
	if p.Status.Phase == corev1.PodRunning && p.Status.PodIP == "" {
		return phase + ", no IP"
	}
	return phase
}

// trainerOrder returns the peers' addresses sorted as addresses (10.0.0.9
// before 10.0.0.10, IPv4 before IPv6); a pod's index in it is its trainer id,
// as start_paddle.py's sorted IP list made it.
func trainerOrder(peers []corev1.Pod) ([]netip.Addr, error) {
	owner := map[netip.Addr]string{}
	addrs := make([]netip.Addr, 0, len(peers))
	for _, p := range peers {
		addr, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil {
			return nil, fmt.Errorf("pod %s has pod IP %q, which is not an address", p.Name, p.Status.PodIP)
		}
		addr = addr.Unmap()
		if other, dup := owner[addr]; dup {
			return nil, fmt.Errorf("pods %s and %s share pod IP %s (hostNetwork pods on one node?); trainer ids need one address per pod", other, p.Name, addr)
		}
		owner[addr] = p.Name
		addrs = append(addrs, addr)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return addrs, nil
}

// trainerID is self's index in the trainer order.
func trainerID(order []netip.Addr, self netip.Addr) (int, error) {
	if i := slices.Index(order, self.Unmap()); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("this pod's address %s is not among the job's pod IPs %s", self, joinAddrs(order))
}

func joinAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}
