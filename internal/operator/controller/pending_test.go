package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The scheduler's message is quoted to its first sentence, what the nodes
// lack: what follows (claims, preemption) says nothing a user can change.
func TestPodsWaitingQuotesTheSchedulersFirstSentence(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").Workers(2).Obj()
	var pods []*corev1.Pod
	for i := range 2 {
		pod := newPod(job, paddlev1.ReplicaWorker, i, podcontract.DefaultPortRange(job.Spec.Replicas(paddlev1.ReplicaWorker)), podOptions{})
		pods = append(pods, testutil.WrapPod(pod).Unschedulable("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "+
			"preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.").Obj())
	}
	reason, msg := podsWaiting(pods)
	if want := "the scheduler cannot place wd-worker-0, wd-worker-1: 0/1 nodes are available: 1 Insufficient cpu."; reason != paddlev1.ReasonUnschedulable || msg != want {
		t.Errorf("podsWaiting = %s, %q; want %s, %q", reason, msg, paddlev1.ReasonUnschedulable, want)
	}
}
