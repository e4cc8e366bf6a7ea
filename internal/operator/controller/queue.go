package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// ReasonQueued is the Suspended condition's reason while a Queue holds a
// job.
const ReasonQueued = "Queued"

// A Queue admits jobs: Kueue (internal/operator/kueue), whose own
// controller suspends and resumes the jobs it queues through spec.suspend.
// The reconciler runs a job only when its Queue does not hold it; a held job
// has no pods and is Queued, its Suspended condition saying why it waits.
type Queue interface {
	// Hold says why the queue keeps the job from running now ("" when it
	// does not).
	Hold(ctx context.Context, job *paddlev1.PaddleJob) (string, error)
	// Watched are the objects, controlled by jobs, whose changes change
	// what Hold says.
	Watched() []client.Object
}

// held is why the reconciler's Queue holds the job, "" without one.
func (r *PaddleJobReconciler) held(ctx context.Context, job *paddlev1.PaddleJob) (string, error) {
	if r.Queue == nil {
		return "", nil
	}
	return r.Queue.Hold(ctx, job)
}
