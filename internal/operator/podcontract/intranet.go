package podcontract

import (
	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Intranet (spec.intranet): how a job's pods address each other, as their
// environment says it. The controller's intranet.go does the rest: the pod's
// network, its host ports and their write-ahead record, and when the
// endpoints are published.

// AddressedByName reports whether the job's pods address each other by DNS
// name (<pod>.<job>, the headless Service's), known before any pod exists:
// in Service intranet, and in Host intranet for parameter-server jobs. Pods
// on one node share its address there, and Paddle's parameter-server
// launcher starts every endpoint that begins with its POD_IP
// (launch/controllers/ps.py:45-61): by the node's IP, each pod of a node
// would start the processes of all of them; by name, exactly its own. The
// Service names a hostNetwork pod at its node's IP. Collective Host-intranet
// jobs keep IPs: Paddle's collective code compares addresses with the
// node's (docs/env-contract.md).
func AddressedByName(spec *paddlev1.PaddleJobSpec) bool {
	switch spec.Intranet {
	case paddlev1.IntranetService:
		return true
	case paddlev1.IntranetHost:
		return spec.PS != nil
	}
	return false
}

// OnHostNetwork reports whether the job's pods run in their node's network
// namespace and share its address (Host intranet).
func OnHostNetwork(spec *paddlev1.PaddleJobSpec) bool {
	return spec.Intranet == paddlev1.IntranetHost
}

// WaitsForEndpoints reports whether pods of the job start only once every pod
// has an IP: addresses are IPs in PodIP and Host intranet.
func WaitsForEndpoints(spec *paddlev1.PaddleJobSpec) bool {
	return !AddressedByName(spec)
}

// ServiceHost is a pod's stable DNS name, resolved through the job's headless
// Service (the pod's hostname and subdomain).
func ServiceHost(job string, rt paddlev1.ReplicaType, index int) string {
	return paddlev1.PodName(job, rt, index) + "." + job
}

// podIPEnv is POD_IP: the address the pod has in the endpoint lists.
func podIPEnv(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, index int) corev1.EnvVar {
	if AddressedByName(&job.Spec) {
		return corev1.EnvVar{Name: "POD_IP", Value: ServiceHost(job.Name, rt, index)}
	}
	return corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"},
	}}
}
