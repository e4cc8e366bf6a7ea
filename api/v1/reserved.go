package v1

// Names the operator reserves in every pod template: a template that uses
// one is refused (internal/operator/validation).
const (
	// ReservedInitContainer holds a pod's training containers back until the
	// job's endpoints are published.
	ReservedInitContainer = "wait-for-endpoints"
	// ReservedGlooStoreContainer serves Gloo's HTTP store of a
	// parameter-server job beside its first server (a native sidecar).
	ReservedGlooStoreContainer = "gloo-store"
	// ReservedVolume mounts the job's endpoints at /etc/paddlejob.
	ReservedVolume = "paddlejob-endpoints"
)
