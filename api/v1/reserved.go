package v1

// Names the operator reserves in every pod template: a template that uses
// one is refused (internal/operator/validation).
const (
	// ReservedInitContainer holds a pod's training containers back until the
	// job's endpoints are published.
	ReservedInitContainer = "wait-for-endpoints"
	// ReservedVolume mounts the job's endpoints at /etc/paddlejob.
	ReservedVolume = "paddlejob-endpoints"
)
