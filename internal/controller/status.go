package controller

import (
	"fmt"
	"strings"

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
	ReasonPodFailed           = "PodFailed"
	ReasonInvalidSpec         = "InvalidSpec"
	ReasonWorkersSucceeded    = "AllWorkersSucceeded"
	ReasonJobFinished         = "JobFinished"
)

// maxListed caps the pod names a condition message lists.
const maxListed = 5

// observed is what a reconcile pass saw of a job's pods.
type observed struct {
	// pods are the job's pods with index < replicas of their role, not being
	// deleted, in role and index order.
	pods []*corev1.Pod
	// missingHosts names the pods whose address is not known yet, in PodIP and
	// Host intranet.
	missingHosts []string
	// invalid, when set, is why the job cannot run (what the schema cannot
	// check).
	invalid string
}

// nextStatus computes the job's status from what was observed. It is pure:
// the same job, pods and time give the same status. Terminal phases are kept.
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

	if pod, msg := firstFailure(obs.pods); pod != nil {
		return finish(st, paddlev1.PaddleJobFailed, now, metav1.Condition{
			Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonPodFailed, Message: msg,
		})
	}
	workers := st.Worker
	if n := job.Spec.ReplicaCount(paddlev1.ReplicaWorker); n > 0 && workers != nil && int(workers.Succeeded) == n {
		return finish(st, paddlev1.PaddleJobCompleted, now, metav1.Condition{
			Type: paddlev1.JobSucceeded, Status: metav1.ConditionTrue, Reason: ReasonWorkersSucceeded,
			Message: fmt.Sprintf("all %d workers succeeded", n),
		})
	}

	desired := job.Spec.TotalReplicas()
	if len(obs.pods) < desired {
		st.Phase = paddlev1.PaddleJobPending
		setCondition(&st, now, paddlev1.JobCreated, metav1.ConditionFalse, ReasonCreatingPods,
			fmt.Sprintf("%d of %d pods exist", len(obs.pods), desired))
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

// firstFailure returns the first failed pod in role and index order, with a
// message naming the pod, its container and exit code.
func firstFailure(pods []*corev1.Pod) (*corev1.Pod, string) {
	for _, p := range pods {
		if p.Status.Phase == corev1.PodFailed {
			return p, describeFailure(p)
		}
	}
	return nil, ""
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
