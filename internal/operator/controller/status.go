package controller

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Condition reasons.
const (
	ReasonPodsCreated         = "PodsCreated"
	ReasonCreatingPods        = "CreatingPods"
	ReasonAllPodsRunning      = "AllPodsRunning"
	ReasonWaitingForPods      = "WaitingForPods"
	ReasonWaitingForAddresses = "WaitingForPodIPs"
	ReasonWaitingForPodGroup  = "WaitingForPodGroup"
	ReasonPodGroupAdmitted    = "PodGroupAdmitted"
	ReasonRestartBackoff      = "RestartBackoff"
	ReasonPodFailed           = "PodFailed"
	ReasonInvalidSpec         = "InvalidSpec"
	ReasonWorkersSucceeded    = "AllWorkersSucceeded"
	ReasonJobFinished         = "JobFinished"
	ReasonSuspended           = "Suspended"
	ReasonResumed             = "Resumed"
)

// maxListed caps the pod names a condition message lists.
const maxListed = 5

// observed is what a reconcile pass saw and decided, for the status.
type observed struct {
	// pods are the job's pods with index < replicas of their role, not being
	// deleted, in role and index order.
	pods []*corev1.Pod
	// podUIDs are the UIDs of every pod of the job the cache shows.
	podUIDs map[string]bool
	// missingHosts names the pods whose address is not known yet, in PodIP and
	// Host intranet.
	missingHosts []string
	// invalid, when set, is why the job cannot run (what the schema cannot
	// check).
	invalid string
	// fatal, when set, fails the job (a pod failure the policies do not
	// restart, the backoff limit, the deadline).
	fatal *metav1.Condition
	// gang names the gang scheduler of the job ("" for none) and
	// podGroupWaiting, while it has not admitted the job, what it waits for.
	gang, podGroupWaiting string
	// backoff is how long the job waits before recreating a failed pod.
	backoff time.Duration
	// created counts the pods this pass created.
	created int
}

// nextStatus computes the job's status from what was observed. It is pure:
// the same job, observation and time give the same status. Terminal phases
// are kept.
func nextStatus(job *paddlev1.PaddleJob, obs observed, now metav1.Time) paddlev1.PaddleJobStatus {
	st := *job.Status.DeepCopy()
	st.ObservedGeneration = job.Generation
	st.Mode = job.Spec.Mode()
	if st.IsFinished() {
		return st
	}
	if obs.invalid != "" {
		return finish(st, paddlev1.PaddleJobFailed, now, metav1.Condition{
			Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonInvalidSpec, Message: obs.invalid,
		})
	}
	if meta.IsStatusConditionTrue(st.Conditions, paddlev1.JobSuspended) {
		setCondition(&st, now, paddlev1.JobSuspended, metav1.ConditionFalse, ReasonResumed, "spec.suspend was cleared")
	}
	st.RecreatingPods = keepPresent(st.RecreatingPods, obs.podUIDs)
	st.HostPorts = keepDesiredPorts(job, st.HostPorts)

	byRole := map[paddlev1.ReplicaType][]*corev1.Pod{}
	for _, p := range obs.pods {
		rt, _, _ := podIndex(p)
		byRole[rt] = append(byRole[rt], p)
	}
	for _, rt := range paddlev1.ReplicaTypes {
		if job.Spec.Replicas(rt) == nil {
			st.SetReplicaStatus(rt, nil)
			continue
		}
		st.SetReplicaStatus(rt, countPods(byRole[rt], job.Spec.ReplicaCount(rt)))
	}
	if len(obs.pods) > 0 && st.StartTime == nil {
		st.StartTime = &now
	}
	if obs.fatal != nil {
		return finish(st, paddlev1.PaddleJobFailed, now, *obs.fatal)
	}
	workers := st.Worker
	if n := job.Spec.ReplicaCount(paddlev1.ReplicaWorker); n > 0 && workers != nil && int(workers.Succeeded) == n {
		return finish(st, paddlev1.PaddleJobCompleted, now, metav1.Condition{
			Type: paddlev1.JobSucceeded, Status: metav1.ConditionTrue, Reason: ReasonWorkersSucceeded,
			Message: fmt.Sprintf("all %d workers succeeded", n),
		})
	}

	if obs.gang != "" {
		if obs.podGroupWaiting != "" {
			setCondition(&st, now, paddlev1.JobPodGroupAdmitted, metav1.ConditionFalse, ReasonWaitingForPodGroup, obs.podGroupWaiting)
		} else {
			setCondition(&st, now, paddlev1.JobPodGroupAdmitted, metav1.ConditionTrue, ReasonPodGroupAdmitted,
				fmt.Sprintf("%s admitted the job's pod group", obs.gang))
		}
	}
	desired := job.Spec.TotalReplicas()
	if len(obs.pods) < desired {
		st.Phase = paddlev1.PaddleJobPending
		reason, msg := ReasonCreatingPods, fmt.Sprintf("%d of %d pods exist", len(obs.pods), desired)
		if obs.podGroupWaiting != "" {
			reason, msg = ReasonWaitingForPodGroup, msg+"; "+obs.podGroupWaiting
		}
		setCondition(&st, now, paddlev1.JobCreated, metav1.ConditionFalse, reason, msg)
	} else {
		setCondition(&st, now, paddlev1.JobCreated, metav1.ConditionTrue, ReasonPodsCreated,
			fmt.Sprintf("all %d pods exist", desired))
		st.Phase = paddlev1.PaddleJobStarting
	}

	notRunning := podsNotRunning(obs.pods)
	switch {
	case len(obs.pods) == desired && len(notRunning) == 0:
		st.Phase = paddlev1.PaddleJobRunning
		setCondition(&st, now, paddlev1.JobRunning, metav1.ConditionTrue, ReasonAllPodsRunning,
			fmt.Sprintf("all %d pods are running", desired))
	case obs.backoff > 0:
		setCondition(&st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonRestartBackoff,
			fmt.Sprintf("recreating failed pods after a %s backoff (restart %d of at most %d)",
				obs.backoff.Round(time.Second), st.RestartCount, job.Spec.BackoffLimitOrDefault()))
	case len(obs.missingHosts) > 0:
		setCondition(&st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonWaitingForAddresses,
			"training starts once every pod has an IP; waiting for "+listNames(obs.missingHosts))
	default:
		msg := "waiting for pods to be created"
		if len(notRunning) > 0 {
			msg = "waiting for " + listNames(notRunning)
		}
		setCondition(&st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonWaitingForPods, msg)
	}
	return st
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

// keepPresent keeps the UIDs still among the job's pods.
func keepPresent(uids []string, present map[string]bool) []string {
	var out []string
	for _, u := range uids {
		if present[u] {
			out = append(out, u)
		}
	}
	return out
}

// keepDesiredPorts drops the host port ranges of pods scaled away.
func keepDesiredPorts(job *paddlev1.PaddleJob, ranges []paddlev1.HostPortRange) []paddlev1.HostPortRange {
	var out []paddlev1.HostPortRange
	for _, h := range ranges {
		if desiredPodName(job, h.Pod) {
			out = append(out, h)
		}
	}
	return out
}

// desiredPodName reports whether the spec wants a pod of that name.
func desiredPodName(job *paddlev1.PaddleJob, name string) bool {
	for _, rt := range paddlev1.ReplicaTypes {
		prefix := job.Name + "-" + string(rt) + "-"
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			i, err := strconv.Atoi(rest)
			return err == nil && i >= 0 && i < job.Spec.ReplicaCount(rt) && paddlev1.PodName(job.Name, rt, i) == name
		}
	}
	return false
}

// finish moves the status to a terminal phase with its condition.
func finish(st paddlev1.PaddleJobStatus, phase paddlev1.PaddleJobPhase, now metav1.Time, c metav1.Condition) paddlev1.PaddleJobStatus {
	st.Phase = phase
	st.CompletionTime = &now
	setCondition(&st, now, c.Type, c.Status, c.Reason, c.Message)
	setCondition(&st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonJobFinished, "the job "+strings.ToLower(string(phase)))
	return st
}

func setCondition(st *paddlev1.PaddleJobStatus, now metav1.Time, t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: st.ObservedGeneration, LastTransitionTime: now,
	})
}

// countPods counts a role's pods by state.
func countPods(pods []*corev1.Pod, replicas int) *paddlev1.ReplicaStatus {
	rs := &paddlev1.ReplicaStatus{}
	for _, p := range pods {
		rs.Restarts += containerRestarts(p)
		switch p.Status.Phase {
		case corev1.PodPending, "":
			if p.Spec.NodeName == "" {
				rs.Pending++
			} else {
				rs.Starting++
			}
		case corev1.PodRunning:
			rs.Running++
		case corev1.PodSucceeded:
			rs.Succeeded++
		case corev1.PodFailed:
			rs.Failed++
		default:
			rs.Unknown++
		}
	}
	rs.Ready = fmt.Sprintf("%d/%d", rs.Running, replicas)
	return rs
}

// podsNotRunning names the pods that are neither running nor done.
func podsNotRunning(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
			out = append(out, p.Name)
		}
	}
	return out
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

func listNames(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// statusChanged reports whether a status write is needed.
func statusChanged(old, updated *paddlev1.PaddleJobStatus) bool {
	return !equality.Semantic.DeepEqual(old, updated)
}
