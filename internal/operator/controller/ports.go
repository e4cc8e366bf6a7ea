package controller

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Every pod owns a range of consecutive ports, fixed when the pod is created
// and recorded in its AnnotationPorts, so neither a container restart nor an
// operator restart ever changes it. The range is laid out as:
//
//	first .. first+P-1   Paddle processes (PADDLE_PORT = first, PADDLE_PORTS_NUM = P)
//	first+P              Gloo HTTP store (used on the rendezvous pod only)
//	first+P+1            PADDLE_MASTER rendezvous (used on the rendezvous pod only)
//
// so the rendezvous ports never collide with an endpoint in the lists.
const (
	// DefaultBasePort is the first port of every pod in PodIP and Service
	// intranet, where each pod has an address of its own. It lies below the
	// Linux ephemeral range so outgoing connections never take it.
	DefaultBasePort = 23000
	// DefaultHostPortMin and DefaultHostPortMax bound the ports handed out in
	// Host intranet: below NodePorts (30000+) and the ephemeral range.
	DefaultHostPortMin = 24000
	DefaultHostPortMax = 29999
	// extraPorts are the Gloo and master ports after the process ports.
	extraPorts = 2
	// gpuResource is counted to size the process ports of multi-GPU pods.
	gpuResource corev1.ResourceName = "nvidia.com/gpu"
)

// portRange is a pod's ports, First to First+Count-1.
type portRange struct {
	First int32
	Count int32
}

func (p portRange) last() int32 { return p.First + p.Count - 1 }

// processPorts is P, the ports the Paddle processes of the pod may use.
func (p portRange) processPorts() int32 { return p.Count - extraPorts }

func (p portRange) glooPort() int32 { return p.First + p.processPorts() }

func (p portRange) masterPort() int32 { return p.First + p.processPorts() + 1 }

func (p portRange) String() string { return fmt.Sprintf("%d-%d", p.First, p.last()) }

func (p portRange) overlaps(o portRange) bool {
	return p.First <= o.last() && o.First <= p.last()
}

// parsePortRange reads an AnnotationPorts value.
func parsePortRange(s string) (portRange, error) {
	first, last, ok := strings.Cut(s, "-")
	if !ok {
		return portRange{}, fmt.Errorf("port range %q is not first-last", s)
	}
	f, err1 := strconv.ParseInt(first, 10, 32)
	l, err2 := strconv.ParseInt(last, 10, 32)
	if err1 != nil || err2 != nil || f < 1 || l > 65535 || l-f+1 <= extraPorts {
		return portRange{}, fmt.Errorf("port range %q is not first-last with at least %d ports", s, extraPorts+1)
	}
	return portRange{First: int32(f), Count: int32(l - f + 1)}, nil
}

// podPortRange is the recorded range of a pod created by the operator.
func podPortRange(pod *corev1.Pod) (portRange, error) {
	return parsePortRange(pod.Annotations[paddlev1.AnnotationPorts])
}

// podGPUs is the number of nvidia.com/gpu a pod of the role asks for: the
// sum over its containers of their limit, else their request.
func podGPUs(spec *paddlev1.ReplicaSpec) int64 {
	if spec == nil {
		return 0
	}
	var gpus int64
	for _, c := range spec.Template.Spec.Containers {
		q, ok := c.Resources.Limits[gpuResource]
		if !ok {
			q, ok = c.Resources.Requests[gpuResource]
		}
		if ok && q.Sign() > 0 {
			// Saturating: Validate refuses more than MaxGPUsPerPod, but the
			// arithmetic below must not wrap on what it refuses.
			gpus = min(gpus+min(q.Value(), maxCountedGPUs), maxCountedGPUs)
		}
	}
	return gpus
}

// maxCountedGPUs is where podGPUs stops counting: past MaxGPUsPerPod, and
// small enough that a port range's arithmetic stays in int32.
const maxCountedGPUs = MaxGPUsPerPod + 1

// portsPerPod is the size of a role's port ranges: one process port per GPU
// the pod requests (at least one), plus the Gloo and master ports.
func portsPerPod(spec *paddlev1.ReplicaSpec) int32 {
	return int32(max(podGPUs(spec), 1)) + extraPorts
}

// defaultPortRange is the range of a role's pods where each pod has an
// address of its own (PodIP and Service intranet).
func defaultPortRange(spec *paddlev1.ReplicaSpec) portRange {
	return portRange{First: DefaultBasePort, Count: portsPerPod(spec)}
}

// firstFit returns the lowest range of count ports within [lo, hi] that
// overlaps none of used.
func firstFit(used []portRange, lo, hi, count int32) (portRange, bool) {
	sorted := append([]portRange(nil), used...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].First < sorted[j].First })
	next := lo
	for _, u := range sorted {
		if u.last() < next {
			continue
		}
		if u.First-next >= count {
			break
		}
		next = u.last() + 1
	}
	if next+count-1 > hi {
		return portRange{}, false
	}
	return portRange{First: next, Count: count}, true
}

// hostPortAllocator hands out port ranges to Host-intranet pods so that no two
// live pods of any job share a port, whatever nodes they land on (the node is
// unknown when the pod is created). What is in use comes from the API — the
// ranges recorded on the live Host-intranet pods — plus the ranges handed out
// whose pods the cache has not shown yet.
type hostPortAllocator struct {
	lo, hi int32

	mu      sync.Mutex
	pending map[types.NamespacedName]portRange
}

func newHostPortAllocator(lo, hi int32) *hostPortAllocator {
	return &hostPortAllocator{lo: lo, hi: hi, pending: map[types.NamespacedName]portRange{}}
}

// allocate returns a range of count ports for each pod in want, given the
// ranges the live pods hold. Pods that already appear in live keep theirs.
func (a *hostPortAllocator) allocate(live map[types.NamespacedName]portRange, want []types.NamespacedName, count int32) (map[types.NamespacedName]portRange, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	used := make([]portRange, 0, len(live)+len(a.pending))
	for key, r := range live {
		delete(a.pending, key) // the cache has caught up with this one
		used = append(used, r)
	}
	for _, r := range a.pending {
		used = append(used, r)
	}
	out := make(map[types.NamespacedName]portRange, len(want))
	var handedOut []types.NamespacedName
	for _, key := range want {
		if r, ok := live[key]; ok {
			out[key] = r
			continue
		}
		r, ok := firstFit(used, a.lo, a.hi, count)
		if !ok {
			// The caller gets no range: none of this call's may stay
			// pending, or they would be held until the operator restarts.
			for _, k := range handedOut {
				delete(a.pending, k)
			}
			return nil, fmt.Errorf("no free range of %d host ports left in %d-%d for pod %s", count, a.lo, a.hi, key.Name)
		}
		handedOut = append(handedOut, key)
		a.pending[key] = r
		used = append(used, r)
		out[key] = r
	}
	return out, nil
}

// release forgets a range whose pod was never created.
func (a *hostPortAllocator) release(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, key)
}
