package v1

// Reasons of the Created condition (False) when an action of the operator's
// last pass failed: each names the action, the condition's message carries
// the error, and the operator retries the pass with a backoff.
const (
	// ReasonPodCreationFailed: creating a missing pod failed (a quota, an
	// admission webhook, the API server refusing the pod).
	ReasonPodCreationFailed = "PodCreationFailed"
	// ReasonPodSecurityRefused: the namespace's PodSecurity level refused
	// a pod: the message names the level and the template's fields beyond
	// it (hostNetwork, hostPath volumes, privileged...).
	ReasonPodSecurityRefused = "PodSecurityRefused"
	// ReasonPodDeletionFailed: deleting the pods scaled away failed.
	ReasonPodDeletionFailed = "PodDeletionFailed"
	// ReasonPodGroupFailed: creating or updating the gang scheduler's
	// PodGroup failed.
	ReasonPodGroupFailed = "PodGroupFailed"
	// ReasonHostPortsFailed: the pods' port ranges could not be handed out
	// (none free in the operator's --host-port-range) or recorded in the
	// status.
	ReasonHostPortsFailed = "HostPortsFailed"
	// ReasonServiceFailed: creating the job's headless Service failed.
	ReasonServiceFailed = "ServiceFailed"
	// ReasonEndpointsFailed: publishing the endpoint lists (the endpoints
	// ConfigMap, the pods' endpoints annotation) failed.
	ReasonEndpointsFailed = "EndpointsFailed"
)
