package podcontract

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
	// ExtraPorts are the Gloo and master ports after the process ports.
	ExtraPorts = 2
	// GPUResource is counted to size the process ports of multi-GPU pods.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
)

// MaxGPUsPerPod bounds the nvidia.com/gpu a pod may ask for: every GPU
// takes one of the pod's process ports, so the count must keep a pod's port
// range small and within 1-65535. No node carries more. Validation refuses
// more; PodGPUs saturates past it.
const MaxGPUsPerPod = 1024

// PortRange is a pod's ports, First to First+Count-1.
type PortRange struct {
	First int32
	Count int32
}

func (p PortRange) Last() int32 { return p.First + p.Count - 1 }

// ProcessPorts is P, the ports the Paddle processes of the pod may use.
func (p PortRange) ProcessPorts() int32 { return p.Count - ExtraPorts }

func (p PortRange) GlooPort() int32 { return p.First + p.ProcessPorts() }

func (p PortRange) MasterPort() int32 { return p.First + p.ProcessPorts() + 1 }

func (p PortRange) String() string { return fmt.Sprintf("%d-%d", p.First, p.Last()) }

func (p PortRange) Overlaps(o PortRange) bool {
	return p.First <= o.Last() && o.First <= p.Last()
}

// ParsePortRange reads an AnnotationPorts value.
func ParsePortRange(s string) (PortRange, error) {
	first, last, ok := strings.Cut(s, "-")
	if !ok {
		return PortRange{}, fmt.Errorf("port range %q is not first-last", s)
	}
	f, err1 := strconv.ParseInt(first, 10, 32)
	l, err2 := strconv.ParseInt(last, 10, 32)
	if err1 != nil || err2 != nil || f < 1 || l > 65535 || l-f+1 <= ExtraPorts {
		return PortRange{}, fmt.Errorf("port range %q is not first-last with at least %d ports", s, ExtraPorts+1)
	}
	return PortRange{First: int32(f), Count: int32(l - f + 1)}, nil
}

// PodPortRange is the recorded range of a pod created by the operator.
func PodPortRange(pod *corev1.Pod) (PortRange, error) {
	return ParsePortRange(pod.Annotations[paddlev1.AnnotationPorts])
}

// PodGPUs is the number of nvidia.com/gpu a pod of the role asks for: the
// sum over its containers of their limit, else their request.
func PodGPUs(spec *paddlev1.ReplicaSpec) int64 {
	if spec == nil {
		return 0
	}
	var gpus int64
	for _, c := range spec.Template.Spec.Containers {
		q, ok := c.Resources.Limits[GPUResource]
		if !ok {
			q, ok = c.Resources.Requests[GPUResource]
		}
		if ok && q.Sign() > 0 {
			// Saturating: Validate refuses more than MaxGPUsPerPod, but the
			// arithmetic below must not wrap on what it refuses.
			gpus = min(gpus+min(q.Value(), maxCountedGPUs), maxCountedGPUs)
		}
	}
	return gpus
}

// maxCountedGPUs is where PodGPUs stops counting: past MaxGPUsPerPod, and
// small enough that a port range's arithmetic stays in int32.
const maxCountedGPUs = MaxGPUsPerPod + 1

// PortsPerPod is the size of a role's port ranges: one process port per GPU
// the pod requests (at least one), plus the Gloo and master ports.
func PortsPerPod(spec *paddlev1.ReplicaSpec) int32 {
	return int32(max(PodGPUs(spec), 1)) + ExtraPorts
}

// DefaultPortRange is the range of a role's pods where each pod has an
// address of its own (PodIP and Service intranet).
func DefaultPortRange(spec *paddlev1.ReplicaSpec) PortRange {
	return PortRange{First: DefaultBasePort, Count: PortsPerPod(spec)}
}
