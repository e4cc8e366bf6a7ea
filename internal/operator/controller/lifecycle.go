package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The actions of the lifecycle policies (policies.go decides): stopping a
// finished job and deleting it after its TTL, suspending, and recreating
// failed pods.

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
	err := r.Delete(ctx, job, ctrl.Preconditions{UID: &uid, ResourceVersion: &rv}, ctrl.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil:
		r.Recorder.Eventf(job, nil, corev1.EventTypeNormal, "Deleted", "Delete",
			"deleted %ds after it finished (ttlSecondsAfterFinished)", *job.Spec.TTLSecondsAfterFinished)
		return reconcile.Result{}, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return reconcile.Result{}, nil // gone, or changed: the next event decides again
	}
	return reconcile.Result{}, fmt.Errorf("deleting PaddleJob %s/%s after its TTL: %w", job.Namespace, job.Name, err)
}

// reconcileSuspended deletes a suspended job's pods and records that it is
// suspended. Its start time is cleared: the deadline counts from the resume.
func (r *PaddleJobReconciler) reconcileSuspended(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, now time.Time) (reconcile.Result, error) {
	var live []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	deleteErr := r.deletePods(ctx, job, live, "suspended")
	_, err := r.writeStatus(ctx, job, suspendedStatus(job, metav1.NewTime(now)), nil)
	return reconcile.Result{}, errors.Join(deleteErr, err)
}

// recreatePods restarts failed pods the restart policies allow: it counts
// them in the status first — so each failure counts once, even when a delete
// must be retried — then deletes them; the pass their deletion triggers
// creates them anew after the backoff.
func (r *PaddleJobReconciler) recreatePods(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, fails failures, now time.Time) (reconcile.Result, error) {
	if len(fails.recreate) > 0 {
		updated := job.DeepCopy()
		st := &updated.Status
		for _, p := range fails.recreate {
			st.RestartCount += 1 + containerRestarts(p)
			st.RecreatingPods = append(st.RecreatingPods, string(p.UID))
		}
		t := metav1.NewMicroTime(now)
		st.LastRestartTime = &t
		if err := r.Status().Update(ctx, updated); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{}, nil // the newer job's event brings us back
			}
			return reconcile.Result{}, fmt.Errorf("recording the restart of PaddleJob %s/%s: %w", job.Namespace, job.Name, err)
		}
		for _, p := range fails.recreate {
			rt, _, _ := podIndex(p)
			podRestarts.WithLabelValues(string(rt)).Inc()
			r.Recorder.Eventf(updated, nil, corev1.EventTypeWarning, "RestartingPod", "Restart",
				"recreating after %s (restart %d, backoffLimit %d)", describeFailure(p), st.RestartCount, updated.Spec.BackoffLimitOrDefault())
		}
		job = updated
	}
	return reconcile.Result{}, r.deletePods(ctx, job, recreating(job, pods), "restarting after a failure")
}

// recreating are the pods counted for recreation whose deletion has not
// started.
func recreating(job *paddlev1.PaddleJob, pods []*corev1.Pod) []*corev1.Pod {
	if len(job.Status.RecreatingPods) == 0 {
		return nil
	}
	counted := map[string]bool{}
	for _, uid := range job.Status.RecreatingPods {
		counted[uid] = true
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if counted[string(p.UID)] && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// restartBackoffLeft is how long the job must still wait before creating the
// replacement of a recreated pod.
func (r *PaddleJobReconciler) restartBackoffLeft(job *paddlev1.PaddleJob, now time.Time) time.Duration {
	if job.Status.LastRestartTime == nil {
		return 0
	}
	wait := restartBackoff(job.Status.RestartCount, r.Options.RestartBackoff, r.Options.MaxRestartBackoff)
	if left := job.Status.LastRestartTime.Add(wait).Sub(now); left > 0 {
		return left
	}
	return 0
}
