package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// spec.progressDeadlineSeconds: a running job whose training reports no
// progress for that long is treated as failed. Paddle can hang where no
// process exits — a start-up barrier a peer never reaches, a collective that
// lost a rank — and then only the absence of progress tells. The clock
// starts when every pod of the job runs (the Running condition turning
// True, again after each restart) and again at each report from any of its
// pods. The job is then restarted as a whole when its workers' restart
// policy restarts pods (restart.go counts it against backoffLimit), else it
// fails. Without the progress endpoint (--progress-bind-address unset) no
// report can come, and the deadline is not applied.

// ReasonProgressDeadlineExceeded is the reason of a restart, or a failure,
// of a job that reported no progress within progressDeadlineSeconds.
const ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"

// lastReport is the latest progress report of a job: when it came, and from
// which pod; a zero time when none came.
type lastReport struct {
	pod string
	at  time.Time
}

// progressStalled decides whether the job's training reported no progress
// within its progressDeadlineSeconds: the cause of a restart when it did
// not, else nil and how long until the deadline (0 when none is watched:
// no deadline, not every pod running, or a restart under way).
func progressStalled(job *paddlev1.PaddleJob, last lastReport, now time.Time) (*restartCause, time.Duration) {
	if job.Spec.ProgressDeadlineSeconds == nil || job.Status.IsConditionTrue(paddlev1.JobRestarting) {
		return nil, 0
	}
	running := meta.FindStatusCondition(job.Status.Conditions, paddlev1.JobRunning)
	if running == nil || running.Status != metav1.ConditionTrue {
		return nil, 0
	}
	// At most 3153600000 s (the schema's bound): within a time.Duration.
	deadline := time.Duration(*job.Spec.ProgressDeadlineSeconds) * time.Second
	ranSince := running.LastTransitionTime.Time
	since := ranSince
	if last.at.After(since) {
		since = last.at
	}
	if left := since.Add(deadline).Sub(now); left > 0 {
		return nil, left
	}
	limit := fmt.Sprintf("progressDeadlineSeconds %d", *job.Spec.ProgressDeadlineSeconds)
	var msg string
	switch {
	case last.at.After(ranSince):
		msg = fmt.Sprintf("no progress reported for %s (%s): the last report came at %s from pod %s",
			now.Sub(last.at).Round(time.Second), limit, stamp(last.at), last.pod)
	case !last.at.IsZero():
		msg = fmt.Sprintf("no progress reported in the %s since every pod ran at %s (%s); the last report, from pod %s at %s, came before",
			now.Sub(ranSince).Round(time.Second), stamp(ranSince), limit, last.pod, stamp(last.at))
	default:
		msg = fmt.Sprintf("no progress reported in the %s since every pod ran at %s (%s): no report came yet",
			now.Sub(ranSince).Round(time.Second), stamp(ranSince), limit)
	}
	return &restartCause{reason: ReasonProgressDeadlineExceeded, message: msg}, 0
}

// restartsOnStall reports whether a job that stalls restarts: when its
// workers' restart policy restarts pods. The workers are whose training
// reports progress; a hang has no exit code, as an evicted pod has none.
func restartsOnStall(job *paddlev1.PaddleJob) bool {
	w := job.Spec.Worker
	return w != nil && w.RestartPolicy != paddlev1.RestartPolicyNever
}

// stamp formats a time as status conditions show it.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// applyProgressDeadline adds to a pass's failures the stall of a job past
// its progress deadline — a restart of the whole job, or its failure — and
// returns how long until the deadline otherwise.
func (r *PaddleJobReconciler) applyProgressDeadline(job *paddlev1.PaddleJob, fails failures, now time.Time, pods []*corev1.Pod) (failures, time.Duration) {
	if r.Options.Progress.Store == nil || fails.fatal != nil || fails.restarting() || fails.settling != nil {
		return fails, 0
	}
	cause, wait := progressStalled(job, r.lastReportOf(job), now)
	switch {
	case cause == nil:
		return fails, wait
	case restartsOnStall(job):
		return fails.restartJobFor(job, pods, *cause), 0
	}
	fails.fatal = &metav1.Condition{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonProgressDeadlineExceeded, Message: cause.message}
	return fails, 0
}

// lastReportOf is the latest progress report of a job: the progress store's,
// else the one its status recorded (the store is empty after an operator
// restart).
func (r *PaddleJobReconciler) lastReportOf(job *paddlev1.PaddleJob) lastReport {
	var last lastReport
	if p := job.Status.Progress; p != nil && p.LastUpdateTime != nil {
		last = lastReport{pod: p.Reporter, at: p.LastUpdateTime.Time}
	}
	pod, at := r.Options.Progress.Store.LastReport(types.NamespacedName{Namespace: job.Namespace, Name: job.Name}, job.UID)
	if at.After(last.at) {
		last = lastReport{pod: pod, at: at}
	}
	return last
}
