package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Reasons of the Failed condition besides a pod's failure.
const (
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
)

// Backoff between recreations of failed pods, doubling with each restart.
const (
	DefaultRestartBackoff    = 5 * time.Second
	DefaultMaxRestartBackoff = 5 * time.Minute
)

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

// restartBackoff is the wait before the n-th recreation: base doubling per
// restart, at most max.
func restartBackoff(restarts int32, base, maxBackoff time.Duration) time.Duration {
	d := base
	for i := int32(1); i < restarts && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// deadlineExceeded reports whether the job ran past activeDeadlineSeconds
// and, if not, how long until it does (0 without a deadline).
func deadlineExceeded(job *paddlev1.PaddleJob, now time.Time) (bool, time.Duration) {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil {
		return false, 0
	}
	end := job.Status.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second)
	if !now.Before(end) {
		return true, 0
	}
	return false, end.Sub(now)
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
