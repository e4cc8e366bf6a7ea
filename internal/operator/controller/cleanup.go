package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Cleanup of a finished job: cleanPodPolicy decides which of its pods are
// deleted, ttlSecondsAfterFinished when the job itself is. A finished job's
// pass runs reconcileFinished and nothing else, and only once the cache
// shows the job finished: the pass that finishes it writes the status alone.

// cleansTerminatedPods reports whether cleanPodPolicy deletes the terminated
// pods of a job that finished in the given phase.
func cleansTerminatedPods(policy paddlev1.CleanPodPolicy, phase paddlev1.PaddleJobPhase) bool {
	switch policy {
	case paddlev1.CleanPodPolicyAlways:
		return true
	case paddlev1.CleanPodPolicyOnFailure:
		return phase == paddlev1.PaddleJobFailed
	case paddlev1.CleanPodPolicyOnCompletion:
		return phase == paddlev1.PaddleJobCompleted
	default:
		return false
	}
}

// podsToDeleteWhenFinished is what a finished job deletes: pods still running
// (parameter servers and heter trainers once the workers are done, the other
// pods of a failed job) always, since a finished job holds no resources, and
// terminated pods when cleanPodPolicy says so.
func podsToDeleteWhenFinished(job *paddlev1.PaddleJob, pods []*corev1.Pod) []*corev1.Pod {
	clean := cleansTerminatedPods(job.Spec.EffectiveCleanPodPolicy(), job.Status.Phase)
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		terminated := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !terminated || clean {
			out = append(out, p)
		}
	}
	return out
}

// ttlExpired reports whether a finished job's ttlSecondsAfterFinished has
// passed and, if not, how long until it does (0 without a TTL).
func ttlExpired(job *paddlev1.PaddleJob, now time.Time) (bool, time.Duration) {
	if job.Spec.TTLSecondsAfterFinished == nil || job.Status.CompletionTime == nil {
		return false, 0
	}
	end := job.Status.CompletionTime.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if !now.Before(end) {
		return true, 0
	}
	return false, end.Sub(now)
}

// reconcileFinished stops what a finished job still runs, applies
// cleanPodPolicy, and deletes the job once ttlSecondsAfterFinished passed.
func (r *PaddleJobReconciler) reconcileFinished(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, now time.Time) (reconcile.Result, error) {
	if err := r.deletePods(ctx, job, podsToDeleteWhenFinished(job, pods), "job "+string(job.Status.Phase)); err != nil {
		return reconcile.Result{}, err
	}
	expired, remaining := ttlExpired(job, now)
	if !expired {
		return reconcile.Result{RequeueAfter: remaining}, nil
	}
	uid, rv := job.UID, job.ResourceVersion
	err := r.Delete(ctx, job, client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil:
		r.eventf(job, corev1.EventTypeNormal, "Deleted", "Delete",
			"deleted %ds after it finished (ttlSecondsAfterFinished)", *job.Spec.TTLSecondsAfterFinished)
		return reconcile.Result{}, nil
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil // gone already
	}
	// A conflict (the job changed since the cache showed it) is returned
	// too: the requeued pass decides again from the newer job.
	return reconcile.Result{}, fmt.Errorf("deleting PaddleJob %s/%s after its TTL: %w", job.Namespace, job.Name, err)
}
