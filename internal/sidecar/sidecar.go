// Package sidecar says which of a pod's init containers are sidecars: native
// sidecar containers (KEP-753, GA in Kubernetes 1.33) are init containers
// with restartPolicy Always. They start in their turn among the init
// containers, keep running beside the pod's containers and never decide the
// pod's phase. The local node runs them; the CLI, the dashboard and the SDK
// read their statuses knowing that a running sidecar is not a pod stuck in
// initialization, and that its exit code is not the pod's failure.
package sidecar

import corev1 "k8s.io/api/core/v1"

// Is reports whether c is a sidecar: an init container whose restartPolicy
// is Always. (The API accepts restartPolicy on init containers only, and only
// Always, so a regular container is never one.)
func Is(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Named reports whether the pod's init container of that name is a sidecar;
// false when the pod has no init container of that name.
func Named(spec *corev1.PodSpec, name string) bool {
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return Is(&spec.InitContainers[i])
		}
	}
	return false
}
