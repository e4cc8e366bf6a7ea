package podcontract

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Pod is the contract's part of one pod of a job, all of it: the operator's
// pod builder (internal/operator/controller/pods.go) applies it to the
// role's template, so that reading a pod's shape means reading this value,
// not the contract's functions one by one.
type Pod struct {
	// Env is what every container of the pod is told (a variable the
	// container sets itself wins): the pod variables, then the job
	// variables, read from the endpoints ConfigMap (optionally: one the
	// ConfigMap leaves out is not set).
	Env []corev1.EnvVar
	// HostNetwork: the pod runs in its node's network namespace and every
	// port of its range is a host port (Host intranet).
	HostNetwork bool
	// Server: the pod serves the port its peers wait for at start-up (a
	// parameter server, a heter trainer); the operator probes it.
	Server bool
	// GlooStore: the pod holds the job's Gloo HTTP store, which the
	// workers are given the address of (ps-0).
	GlooStore bool
	// GlooFiles: the pod meets its Gloo peers over the file-system
	// rendezvous, under the job's store prefix.
	GlooFiles bool
	// WaitsForEndpoints: the pod starts once every pod of the job has an
	// IP, its lists final (addresses are IPs).
	WaitsForEndpoints bool
	// WaitsForServers are the roles whose servers the pod starts after.
	WaitsForServers []paddlev1.ReplicaType
}

// Waits reports whether the pod starts behind the wait init container.
func (p Pod) Waits() bool { return p.WaitsForEndpoints || len(p.WaitsForServers) > 0 }

// ForPod is the contract of the pod of a role and index with its port
// range. Of the operator's options it reads an elastic job's etcd and the
// Gloo store prefix.
func ForPod(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, index int, ports PortRange, opts PodEnvOptions) Pod {
	spec := &job.Spec
	env := PodEnv(job, rt, index, ports, opts)
	for _, n := range JobEnvNames(spec, rt) {
		env = append(env, corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: EndpointsConfigMapName(job.Name)},
				Key:                  n,
				Optional:             ptr.To(true),
			},
		}})
	}
	return Pod{
		Env:               env,
		HostNetwork:       OnHostNetwork(spec),
		Server:            IsServerRole(spec, rt),
		GlooStore:         ServesGlooStore(spec) && rt == paddlev1.ReplicaPS && index == 0,
		GlooFiles:         UsesGlooFiles(spec, rt),
		WaitsForEndpoints: WaitsForEndpoints(spec),
		WaitsForServers:   ServersOf(spec, rt),
	}
}
