package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Restarts: each role's restartPolicy decides which failed pods are
// recreated and which fail the job; backoffLimit bounds the restarts and the
// restart backoff spaces them. A recreation is counted in the status (the
// write-ahead step recordRestarts) before its pod is deleted, so a failure
// counts once whatever is retried.

// ReasonBackoffLimitExceeded fails a job whose pods restarted more than
// backoffLimit times.
const ReasonBackoffLimitExceeded = "BackoffLimitExceeded"

// Backoff between recreations of failed pods, doubling with each restart.
const (
	DefaultRestartBackoff    = 5 * time.Second
	DefaultMaxRestartBackoff = 5 * time.Minute
)

// failures is what the restart policies make of a job's failed pods.
type failures struct {
	// fatal, when set, fails the job: a pod failed and its role's policy does
	// not restart it, or restarting it would exceed the backoff limit.
	fatal *metav1.Condition
	// recreate are failed pods the policies restart by recreating them.
	recreate []*corev1.Pod
	// restarts is the job's restart count with the pods of recreate counted:
	// the recorded count, the in-place restarts of the live pods, and one
	// per pod to recreate.
	restarts int32
}

// evaluateFailures applies each role's restart policy and the job's backoff
// limit to its pods, in role and index order. Pods already counted (their
// UID in status.recreatingPods) are neither counted nor failed again.
func evaluateFailures(job *paddlev1.PaddleJob, pods []*corev1.Pod) failures {
	counted := map[string]bool{}
	for _, uid := range job.Status.RecreatingPods {
		counted[uid] = true
	}
	var f failures
	restarts := job.Status.RestartCount
	var last string
	for _, p := range pods {
		if counted[string(p.UID)] {
			continue
		}
		restarts += containerRestarts(p)
		if p.Status.Phase != corev1.PodFailed {
			continue
		}
		rt, _, _ := podIndex(p)
		msg := describeFailure(p)
		if !restartable(job, rt, p) {
			if f.fatal == nil {
				f.fatal = &metav1.Condition{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonPodFailed, Message: msg}
			}
			continue
		}
		restarts++
		last = msg
		f.recreate = append(f.recreate, p)
	}
	f.restarts = restarts
	if limit := job.Spec.BackoffLimitOrDefault(); f.fatal == nil && restarts > limit {
		if last == "" {
			last = lastRestartedContainer(pods)
		}
		f.fatal = &metav1.Condition{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonBackoffLimitExceeded,
			Message: fmt.Sprintf("the job's pods restarted %d times, more than backoffLimit %d; last failure: %s", restarts, limit, last)}
	}
	return f
}

// restartable reports whether a failed pod's role restarts it.
func restartable(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, p *corev1.Pod) bool {
	switch job.Spec.EffectiveRestartPolicy(rt) {
	case paddlev1.RestartPolicyOnFailure:
		return true
	case paddlev1.RestartPolicyExitCode:
		code, ok := failedExitCode(p)
		// No exit code: the pod itself failed (evicted, preempted, node lost).
		return !ok || job.Spec.Replicas(rt).IsRetryableExitCode(code)
	}
	return false
}

// failedExitCode is the exit code of the first container that failed.
func failedExitCode(p *corev1.Pod) (int32, bool) {
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return t.ExitCode, true
		}
	}
	return 0, false
}

func containerRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.InitContainerStatuses {
		n += cs.RestartCount
	}
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// lastRestartedContainer describes the last failure of a container that
// restarted in place.
func lastRestartedContainer(pods []*corev1.Pod) string {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; cs.RestartCount > 0 && t != nil {
				return fmt.Sprintf("pod %s: container %q exited with code %d (%s)", p.Name, cs.Name, t.ExitCode, t.Reason)
			}
		}
	}
	return "unknown"
}

// describeFailure says why a pod failed: the first container that exited
// with a non-zero code, else the pod's own reason (eviction, deadline...).
func describeFailure(p *corev1.Pod) string {
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t == nil || t.ExitCode == 0 {
			continue
		}
		msg := fmt.Sprintf("pod %s: container %q exited with code %d", p.Name, cs.Name, t.ExitCode)
		if t.Reason != "" {
			msg += " (" + t.Reason + ")"
		}
		if m := strings.TrimSpace(t.Message); m != "" {
			msg += ": " + truncate(m, 256)
		}
		return msg
	}
	msg := fmt.Sprintf("pod %s failed", p.Name)
	if p.Status.Reason != "" {
		msg += ": " + p.Status.Reason
	}
	if p.Status.Message != "" {
		msg += ": " + truncate(p.Status.Message, 256)
	}
	return msg
}

// restartBackoff is the wait before the n-th recreation: base doubling per
// restart, at most max.
func restartBackoff(restarts int32, base, maxBackoff time.Duration) time.Duration {
	d := base
	for i := int32(1); i < restarts && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
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

// recreatePods restarts failed pods the restart policies allow: it counts
// them in the status first (recordRestarts) — so each failure counts once,
// even when a delete must be retried — then deletes them; the pass their
// deletion triggers creates them anew after the backoff.
func (r *PaddleJobReconciler) recreatePods(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, fails failures, now time.Time) (reconcile.Result, error) {
	if len(fails.recreate) > 0 {
		updated, err := r.recordRestarts(ctx, job, fails.recreate, now)
		if err != nil || updated == nil {
			return reconcile.Result{}, err
		}
		job = updated
	}
	return reconcile.Result{}, r.deletePods(ctx, job, recreating(job, pods), "restarting after a failure")
}

// recordRestarts is a write-ahead step: it counts the pods to recreate in
// the job's restart count, and their UIDs in status.recreatingPods, before
// they are deleted. It returns the job as written, nil on a conflict.
func (r *PaddleJobReconciler) recordRestarts(ctx context.Context, job *paddlev1.PaddleJob, recreate []*corev1.Pod, now time.Time) (*paddlev1.PaddleJob, error) {
	st := *job.Status.DeepCopy()
	for _, p := range recreate {
		st.RestartCount += 1 + containerRestarts(p)
		st.RecreatingPods = append(st.RecreatingPods, string(p.UID))
	}
	t := metav1.NewMicroTime(now)
	st.LastRestartTime = &t
	updated, err := r.updateStatus(ctx, job, st, "recording the restart")
	if err != nil || updated == nil {
		return nil, err
	}
	for _, p := range recreate {
		rt, _, _ := podIndex(p)
		podRestarts.WithLabelValues(string(rt)).Inc()
		r.eventf(updated, corev1.EventTypeWarning, "RestartingPod", "Restart",
			"recreating after %s (restart %d, backoffLimit %d)", describeFailure(p), updated.Status.RestartCount, updated.Spec.BackoffLimitOrDefault())
	}
	return updated, nil
}
