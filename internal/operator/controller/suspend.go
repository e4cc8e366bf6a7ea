package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Suspend: spec.suspend deletes a job's pods and keeps the job (its host
// port ranges and restart count included) until it is cleared. A job Kueue
// holds (its Queue: internal/operator/kueue) is Queued, its Suspended
// condition saying why it waits.

// reconcileSuspended deletes a suspended job's pods and records that it is
// suspended, or Queued when Kueue holds it (queued says why it waits). Its
// start time is cleared: the deadline counts from the resume.
func (r *PaddleJobReconciler) reconcileSuspended(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, now time.Time, queued string) (reconcile.Result, error) {
	var live []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	deleteErr := r.deletePods(ctx, job, live, "suspended")
	st := suspendedStatus(job, metav1.NewTime(now))
	if queued != "" {
		st.Phase = paddlev1.PaddleJobQueued
		setCondition(&st, metav1.NewTime(now), paddlev1.JobSuspended, metav1.ConditionTrue, ReasonQueued, queued)
	}
	_, err := r.writeStatus(ctx, job, st, nil)
	return reconcile.Result{}, errors.Join(deleteErr, err)
}

// markResumed records that a suspended job was resumed: it runs again.
func markResumed(st *paddlev1.PaddleJobStatus, now metav1.Time) {
	if meta.IsStatusConditionTrue(st.Conditions, paddlev1.JobSuspended) {
		setCondition(st, now, paddlev1.JobSuspended, metav1.ConditionFalse, ReasonResumed, "spec.suspend was cleared")
	}
}

// suspendedStatus is the status of a suspended job: no pods, and a start
// time cleared so the deadline counts from the resume.
func suspendedStatus(job *paddlev1.PaddleJob, now metav1.Time) paddlev1.PaddleJobStatus {
	st := *job.Status.DeepCopy()
	st.ObservedGeneration = job.Generation
	st.Mode = job.Spec.Mode()
	st.Phase = paddlev1.PaddleJobSuspended
	st.StartTime = nil
	for _, rt := range paddlev1.ReplicaTypes {
		if job.Spec.Replicas(rt) == nil {
			st.SetReplicaStatus(rt, nil)
			continue
		}
		st.SetReplicaStatus(rt, countPods(nil, job.Spec.ReplicaCount(rt)))
	}
	setCondition(&st, now, paddlev1.JobSuspended, metav1.ConditionTrue, ReasonSuspended, "spec.suspend is set: the job's pods are deleted until it is cleared")
	setCondition(&st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonSuspended, "the job is suspended")
	return st
}
