package node

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Crash backoff: the kubelet waits 10 s before the first restart and doubles
// up to 5 minutes. A local node restarts sooner, from 1 s, so a crashing
// training job shows its next attempt quickly; the cap is the kubelet's.
const (
	crashBackoffBase = time.Second
	crashBackoffMax  = 5 * time.Minute
	// A container that ran this long without crashing starts over at the base
	// delay.
	crashBackoffReset = 10 * time.Minute
)

// shouldRestart reports whether a container that exited with exitCode runs
// again. A sidecar always does, whatever the pod's restartPolicy; an init
// container runs until it succeeds unless the policy is Never; a container
// follows the pod's restartPolicy. A run that a failed startup or liveness
// probe ended is a failure whatever its exit code: the kubelet restarts it
// unless the policy is Never.
func shouldRestart(policy corev1.RestartPolicy, kind containerKind, exitCode int32, probeKilled bool) bool {
	failed := exitCode != 0 || probeKilled
	switch {
	case kind == kindSidecar:
		return true
	case kind == kindInit:
		return failed && policy != corev1.RestartPolicyNever
	}
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return failed
	default: // Always, the API default
		return true
	}
}

// NextCrashBackoff is the wait before a restart, given the previous wait
// (zero before the first restart) and how long the process ran: the node's
// for containers, the local cluster's supervisor's for its components.
func NextCrashBackoff(previous, ranFor time.Duration) time.Duration {
	if previous == 0 || ranFor >= crashBackoffReset {
		return crashBackoffBase
	}
	return min(previous*2, crashBackoffMax)
}
