package client

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/paddlefailure"
)

// Explanation is what a known failure means: its id, the cause, the fix and
// the section of docs/paddle-known-issues.md that describes it.
type Explanation = paddlefailure.Explanation

// FailureExplanation explains a job's latest failure, from its conditions:
// the Failed condition's message when the job failed, else the Restarting
// condition's (the failure it last restarted after, kept once the pods run
// again). It is nil when that failure is not a known one or the job had
// none. The operator writes the explanation into the message
// (docs/paddle-known-issues.md); the Python SDK reads it the same way
// (test/vectors/failures).
func FailureExplanation(job *paddlev1.PaddleJob) *Explanation {
	if c := meta.FindStatusCondition(job.Status.Conditions, paddlev1.JobFailed); c != nil && c.Status == metav1.ConditionTrue {
		return paddlefailure.Parse(c.Message)
	}
	if c := meta.FindStatusCondition(job.Status.Conditions, paddlev1.JobRestarting); c != nil {
		return paddlefailure.Parse(c.Message)
	}
	return nil
}

// ContainerFailure is a container of a pod that failed.
type ContainerFailure struct {
	Pod, Container string
	// Init is true for an init container.
	Init     bool
	ExitCode int32
	// Reason is the kubelet's: Error, OOMKilled...
	Reason string
	// LastLines is the end of its log the kubelet kept
	// (terminationMessagePolicy FallbackToLogsOnError, which the operator
	// sets) or the message its program wrote.
	LastLines string
	// Restarted is true when the container restarted in place since: the
	// failure is its last termination.
	Restarted bool
	// Explanation explains a known failure; nil for another.
	Explanation *Explanation
}

// ContainerFailures lists the containers of the pods that exited with a
// non-zero code (or the kernel killed), init containers first in each pod,
// in the pods' order.
func ContainerFailures(pods []corev1.Pod) []ContainerFailure {
	var out []ContainerFailure
	for i := range pods {
		p := &pods[i]
		for _, set := range []struct {
			init     bool
			statuses []corev1.ContainerStatus
		}{{true, p.Status.InitContainerStatuses}, {false, p.Status.ContainerStatuses}} {
			for _, cs := range set.statuses {
				t, restarted := cs.State.Terminated, false
				if t == nil {
					t, restarted = cs.LastTerminationState.Terminated, true
				}
				if t == nil || (t.ExitCode == 0 && t.Reason != "OOMKilled") {
					continue
				}
				out = append(out, ContainerFailure{
					Pod: p.Name, Container: cs.Name, Init: set.init, ExitCode: t.ExitCode, Reason: t.Reason,
					LastLines: t.Message, Restarted: restarted, Explanation: paddlefailure.Explain(p, cs.Name, t),
				})
			}
		}
	}
	return out
}
