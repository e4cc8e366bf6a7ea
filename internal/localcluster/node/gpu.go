package node

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// resourceNvidiaGPU is the extended resource of NVIDIA's device plugin.
const resourceNvidiaGPU corev1.ResourceName = "nvidia.com/gpu"

// gpuEnv is the environment NVIDIA's device plugin gives a container
// allotted GPUs: NVIDIA_VISIBLE_DEVICES, here listing as many device
// indices as it asks for ("0,1" for two). The node's GPUs are emulated: the
// scheduler places pods that request them, and the programs run on the CPU.
// CUDA_VISIBLE_DEVICES stays unset, as under the device plugin: Paddle's
// launcher takes it to mean GPUs and would configure NCCL on a CPU build.
// Nil when the container asks for none.
func gpuEnv(c *corev1.Container) []envVar {
	n := gpuCount(c)
	if n <= 0 {
		return nil
	}
	indices := make([]string, n)
	for i := range indices {
		indices[i] = strconv.Itoa(i)
	}
	devices := strings.Join(indices, ",")
	return []envVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: devices}}
}

// gpuCount is the number of GPUs a container asks for: its limit, else its
// request (the API makes them equal for extended resources).
func gpuCount(c *corev1.Container) int64 {
	if q, ok := c.Resources.Limits[resourceNvidiaGPU]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Requests[resourceNvidiaGPU]; ok {
		return q.Value()
	}
	return 0
}
