package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/sidecar"
	"github.com/paddlejob/paddlejob/internal/truncate"
)

// Restarts: each role's restartPolicy decides which failed pods restart and
// which fail the job; the job's restartScope decides what a restart brings
// back — the failed pods alone (Pod) or every pod of the job (Job, the
// default in parameter-server mode, where a lone new server has empty tables
// and a lone new trainer waits at barriers its peers passed); backoffLimit
// bounds the restarts and the restart backoff spaces them. A restart is
// counted in the status (the write-ahead step recordRestart) before any pod
// is deleted, so a failure counts once whatever is retried, and no pod is
// created again until every pod it restarts is gone.

// Reasons of the restarts.
const (
	// ReasonBackoffLimitExceeded fails a job whose pods restarted more than
	// backoffLimit times.
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	// ReasonRestarted: the Restarting condition is False again, every pod
	// of the job runs.
	ReasonRestarted = "Restarted"
	// ReasonStoppingPods: the Running condition is False while the pods of
	// a restart stop.
	ReasonStoppingPods = "StoppingPods"
)

// Backoff between restarts, doubling with each restart.
const (
	DefaultRestartBackoff    = 5 * time.Second
	DefaultMaxRestartBackoff = 5 * time.Minute
)

// failures is what the restart policies make of a job's failed pods.
type failures struct {
	// fatal, when set, fails the job: a pod failed and its role's policy does
	// not restart it, or restarting it would exceed the backoff limit.
	fatal *metav1.Condition
	// recreate are failed pods the policies restart alone (restartScope Pod).
	recreate []*corev1.Pod
	// restartJob, when set, restarts every pod of the job (restartScope Job,
	// or a progress deadline passed): why.
	restartJob *restartCause
	// restarts is the job's restart count with this pass's restarts
	// counted: the recorded count, the in-place restarts of the live pods,
	// one per pod to recreate and one for a restart of the whole job.
	restarts int32
	// last describes the latest failure the policies restart, for the
	// backoff limit's message.
	last string
	// settling, when set, are new failures the policies would restart,
	// whose decision waits until the pods failing with them have failed
	// too (failuresettle.go): nothing restarts meanwhile.
	settling *failureSet
}

// restartCause is why a job restarts as a whole: the Restarting condition's
// reason and a message naming the pod, container and exit code or signal.
type restartCause struct {
	reason, message string
}

// evaluateFailures applies each role's restart policy, the job's restart
// scope and its backoff limit to its pods at now, with the failure
// settling window. Pods already counted
// (their UID in status.recreatingPods) are neither counted nor failed
// again. The new failures are judged as a set (failuresettle.go): those
// that fail together, in the order their containers finished, once the
// settling window of the first has passed — or at once when one of them
// fails the job.
func evaluateFailures(job *paddlev1.PaddleJob, pods []*corev1.Pod, now time.Time, window time.Duration) failures {
	counted := map[string]bool{}
	for _, uid := range job.Status.RecreatingPods {
		counted[uid] = true
	}
	wholeJob := job.Spec.RestartScope == paddlev1.RestartScopeJob
	var f failures
	restarts := job.Status.RestartCount
	var failed []*corev1.Pod
	for _, p := range pods {
		if counted[string(p.UID)] {
			continue
		}
		restarts += containerRestarts(p)
		if p.Status.Phase == corev1.PodFailed {
			failed = append(failed, p)
		}
	}
	set := settleFailures(failed, now, window)
	inPlace := restarts
	for _, p := range set.pods {
		rt, _, _ := podIndex(p)
		msg := describeFailure(p)
		if !restartable(job, rt, p) {
			if f.fatal == nil {
				f.fatal = &metav1.Condition{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonPodFailed, Message: msg}
			}
			continue
		}
		if wholeJob {
			if f.restartJob == nil {
				f.restartJob = &restartCause{reason: ReasonPodFailed, message: msg}
				f.last = msg
			}
			continue
		}
		restarts++
		f.last = msg
		f.recreate = append(f.recreate, p)
	}
	if f.restartJob != nil {
		restarts++ // the whole job restarts once, whatever failed
	}
	f.restarts = restarts
	switch {
	case f.fatal != nil:
		f.recreate, f.restartJob = nil, nil // nothing restarts a failed job
	case set.wait > 0:
		// The set is still open: a failure yet to come may fail the job.
		f.recreate, f.restartJob, f.last, f.restarts = nil, nil, "", inPlace
		f.settling = &set
	}
	f.checkBackoffLimit(job, pods)
	return f
}

// restartJobFor restarts the whole job for cause, counting the restart
// against the backoff limit, unless the failures already fail the job or
// restart pods.
func (f failures) restartJobFor(job *paddlev1.PaddleJob, pods []*corev1.Pod, cause restartCause) failures {
	if f.fatal != nil || f.restarting() || f.settling != nil {
		return f
	}
	f.restartJob = &cause
	f.last = cause.message
	f.restarts++
	f.checkBackoffLimit(job, pods)
	return f
}

// checkBackoffLimit fails the job when its restarts exceed backoffLimit.
func (f *failures) checkBackoffLimit(job *paddlev1.PaddleJob, pods []*corev1.Pod) {
	limit := ptr.Deref(job.Spec.BackoffLimit, paddlev1.DefaultBackoffLimit)
	if f.fatal != nil || f.restarts <= limit {
		return
	}
	last := f.last
	if last == "" {
		last = lastRestartedContainer(pods)
	}
	f.fatal = &metav1.Condition{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonBackoffLimitExceeded,
		Message: fmt.Sprintf("the job's pods restarted %d times, more than backoffLimit %d; last failure: %s", f.restarts, limit, last)}
	f.recreate, f.restartJob = nil, nil
}

// restarting reports whether the failures restart pods.
func (f failures) restarting() bool { return f.restartJob != nil || len(f.recreate) > 0 }

// restartable reports whether a failed pod's role restarts it.
func restartable(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, p *corev1.Pod) bool {
	switch job.Spec.Replicas(rt).RestartPolicy {
	case paddlev1.RestartPolicyOnFailure:
		return true
	case paddlev1.RestartPolicyExitCode:
		code, ok := failedExitCode(p)
		// No exit code: the pod itself failed (evicted, preempted, node lost).
		return !ok || job.Spec.Replicas(rt).IsRetryableExitCode(code)
	}
	return false
}

// trainingStatuses are the statuses of a pod's init containers and
// containers, without its sidecars (the Gloo store): as for the kubelet,
// their exits and restarts are not the training's.
func trainingStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(p.Status.InitContainerStatuses)+len(p.Status.ContainerStatuses))
	for _, cs := range p.Status.InitContainerStatuses {
		if !sidecar.Named(&p.Spec, cs.Name) {
			out = append(out, cs)
		}
	}
	return append(out, p.Status.ContainerStatuses...)
}

// failedExitCode is the exit code of the first container that failed.
func failedExitCode(p *corev1.Pod) (int32, bool) {
	for _, cs := range trainingStatuses(p) {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return t.ExitCode, true
		}
	}
	return 0, false
}

func containerRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range trainingStatuses(p) {
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
// with a non-zero code (and the signal behind a code above 128, the line of
// its log that says what failed, what a known failure means: explain.go),
// else the pod's own reason (eviction, deadline, node restart...).
func describeFailure(p *corev1.Pod) string {
	for _, cs := range trainingStatuses(p) {
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t == nil || t.ExitCode == 0 {
			continue
		}
		msg := fmt.Sprintf("pod %s: container %q exited with code %d", p.Name, cs.Name, t.ExitCode)
		var notes []string
		if sig := signalOf(t.ExitCode); sig != "" {
			notes = append(notes, sig)
		}
		if t.Reason != "" {
			notes = append(notes, t.Reason)
		}
		if len(notes) > 0 {
			msg += " (" + strings.Join(notes, ", ") + ")"
		}
		line, explanation := explainTermination(p, cs.Name, t)
		msg += line
		if p.Status.Reason != "" {
			msg += "; pod " + p.Status.Reason
		}
		return withExplanation(msg, explanation)
	}
	msg := fmt.Sprintf("pod %s failed", p.Name)
	if p.Status.Reason != "" {
		msg += ": " + p.Status.Reason
	}
	if p.Status.Message != "" {
		msg += ": " + truncate.String(p.Status.Message, 256)
	}
	return msg
}

// signalOf names the signal behind an exit code of 128+n, as the kubelet and
// shells report a process a signal ended ("" for other codes).
func signalOf(code int32) string {
	if code <= 128 || code > 128+64 {
		return ""
	}
	if name := unix.SignalName(syscall.Signal(code - 128)); name != "" {
		return "signal " + name
	}
	return fmt.Sprintf("signal %d", code-128)
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

// recreating are the pods counted for a restart whose deletion has not
// started.
func recreating(job *paddlev1.PaddleJob, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range restartedPods(job, pods) {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// restartedPods are the job's pods counted for a restart (status.recreatingPods)
// that still exist: no pod is created until they are all gone, so a
// restarted job never mixes old and new pods.
func restartedPods(job *paddlev1.PaddleJob, pods []*corev1.Pod) []*corev1.Pod {
	if len(job.Status.RecreatingPods) == 0 {
		return nil
	}
	counted := map[string]bool{}
	for _, uid := range job.Status.RecreatingPods {
		counted[uid] = true
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if counted[string(p.UID)] {
			out = append(out, p)
		}
	}
	return out
}

// restart counts the restart the failures call for (recordRestart), then
// deletes the pods it restarts; once they are gone, a pass creates them anew
// after the backoff.
func (r *PaddleJobReconciler) restart(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, fails failures, now time.Time) (reconcile.Result, error) {
	if fails.restarting() {
		updated, err := r.recordRestart(ctx, job, pods, fails, now)
		if err != nil {
			return reconcile.Result{}, err
		}
		job = updated
	}
	why := "restarting after a failure"
	if job.Spec.RestartScope == paddlev1.RestartScopeJob {
		why = "restarting the whole job"
	}
	return reconcile.Result{}, r.deletePods(ctx, job, recreating(job, pods), why)
}

// recordRestart is a write-ahead step: it counts the restart in the job's
// restart count, and the UIDs of the pods it restarts (the failed ones, or
// every pod of the job) in status.recreatingPods, before any is deleted;
// the Restarting condition says why. It returns the job as written.
func (r *PaddleJobReconciler) recordRestart(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, fails failures, now time.Time) (*paddlev1.PaddleJob, error) {
	st := *job.Status.DeepCopy()
	restarted := fails.recreate
	cause := restartCause{reason: ReasonPodFailed}
	if fails.restartJob != nil {
		st.RestartCount++
		cause = *fails.restartJob
		restarted = nil
		for _, p := range pods {
			if p.DeletionTimestamp == nil && !slices.Contains(st.RecreatingPods, string(p.UID)) {
				restarted = append(restarted, p)
			}
		}
	} else {
		st.RestartCount += int32(len(restarted))
		cause.message = describeFailure(restarted[0])
		if len(restarted) > 1 {
			cause.message += fmt.Sprintf(" (and %d more failed pods)", len(restarted)-1)
		}
	}
	for _, p := range restarted {
		st.RestartCount += containerRestarts(p)
		st.RecreatingPods = append(st.RecreatingPods, string(p.UID))
	}
	t := metav1.NewMicroTime(now)
	st.LastRestartTime = &t
	what := "recreating the failed pods"
	if fails.restartJob != nil {
		what = fmt.Sprintf("restarting all %d pods of the job", len(restarted))
	}
	limit := ptr.Deref(job.Spec.BackoffLimit, paddlev1.DefaultBackoffLimit)
	setCondition(&st, metav1.NewTime(now), paddlev1.JobRestarting, metav1.ConditionTrue, cause.reason,
		fmt.Sprintf("restart %d (backoffLimit %d), %s after %s", st.RestartCount, limit, what, cause.message))
	updated, err := r.updateStatus(ctx, job, st, "recording the restart")
	if err != nil {
		return nil, err
	}
	if fails.restartJob != nil {
		jobRestarts.WithLabelValues(cause.reason).Inc()
		r.eventf(updated, corev1.EventTypeWarning, "RestartingJob", "Restart",
			"restarting all %d pods of the job after %s (restart %d, backoffLimit %d)", len(restarted), cause.message, updated.Status.RestartCount, limit)
		return updated, nil
	}
	for _, p := range restarted {
		rt, _, _ := podIndex(p)
		podRestarts.WithLabelValues(string(rt)).Inc()
		r.eventf(updated, corev1.EventTypeWarning, "RestartingPod", "Restart",
			"recreating after %s (restart %d, backoffLimit %d)", describeFailure(p), updated.Status.RestartCount, limit)
	}
	return updated, nil
}

// markRestarted turns the Restarting condition False once every pod of the
// job runs again, keeping the cause in its message.
func markRestarted(st *paddlev1.PaddleJobStatus, now metav1.Time) {
	c := meta.FindStatusCondition(st.Conditions, paddlev1.JobRestarting)
	if c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	setCondition(st, now, paddlev1.JobRestarting, metav1.ConditionFalse, ReasonRestarted, "every pod runs again; "+c.Message)
}
