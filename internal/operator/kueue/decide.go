package kueue

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueueapi "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// step is what one pass of the Kueue controller does for a queued job.
type step int

const (
	// stepNone: the job waits (or runs) as it is.
	stepNone step = iota
	// stepCreate creates the job's Workload.
	stepCreate
	// stepAdopt makes the job the controller of the Workload MultiKueue
	// prebuilt for it (a worker cluster's copy of a manager's job).
	stepAdopt
	// stepOutOfSync finishes a prebuilt Workload whose pod sets are not the
	// job's, as Kueue does: MultiKueue then dispatches the job again.
	stepOutOfSync
	// stepRecreate deletes a Workload that no longer matches the suspended
	// job's roles; the next pass creates one that does.
	stepRecreate
	// stepUpdateQueue follows a change of the queue-name label.
	stepUpdateQueue
	// stepUpdatePriority follows a change of the priority-class label.
	stepUpdatePriority
	// stepStart applies the admission to the templates and resumes the job.
	stepStart
	// stepRefuse finishes a Workload admitted with fewer pods than the job
	// can run with (partial admission of a role that cannot shrink).
	stepRefuse
	// stepStop suspends the job and restores its templates.
	stepStop
	// stepRelease gives back the quota of an evicted job whose pods are gone.
	stepRelease
	// stepFinish marks the Workload of a finished job Finished.
	stepFinish
	// stepDropFinalizer lets a finished or deleted Workload go.
	stepDropFinalizer
	// stepPodsReady updates the Workload's PodsReady condition.
	stepPodsReady
)

var stepNames = [...]string{"none", "create", "adopt", "out-of-sync", "recreate", "update-queue", "update-priority",
	"start", "refuse", "stop", "release", "finish", "drop-finalizer", "pods-ready"}

func (s step) String() string { return stepNames[s] }

// view is what a decision reads: the job, its Workload (nil when it has
// none) and its pods.
type view struct {
	job job
	wl  *workload
	// owned: the Workload's controller is the job (a prebuilt one is not
	// until adopted).
	owned bool
	pods  []*corev1.Pod
}

// active reports whether some pod of the job has not terminated
// (terminating pods count: they may still hold their node's resources).
func (v view) active() bool {
	for _, p := range v.pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true
		}
	}
	return false
}

// decide is Kueue's jobframework protocol for one pass.
func decide(v view) step {
	j, wl := v.job, v.wl
	switch {
	case wl != nil && stageOf(wl) == stageFinished && hasFinalizer(wl):
		return stepDropFinalizer
	case j.Status.IsFinished():
		if wl != nil && stageOf(wl) != stageFinished {
			return stepFinish
		}
		return stepNone
	case wl != nil && wl.DeletionTimestamp != nil:
		return decideDeleted(v)
	case wl == nil:
		return decideMissing(v)
	case !v.owned:
		if !equivalentPodSets(wl.Spec.PodSets, j.PodSets()) {
			return stepOutOfSync
		}
		return stepAdopt
	case stageOf(wl) == stageFinished:
		return stepNone // as in Kueue: a finished Workload is not acted on
	case stageOf(wl) == stageEvicted:
		switch {
		case !j.IsSuspended():
			return stepStop
		case !v.active() && isTrue(wl, workloadQuotaReserved):
			return stepRelease
		}
		return stepNone
	case j.IsSuspended():
		return decideSuspended(v)
	case stageOf(wl) != stageAdmitted:
		return stepStop
	case priorityChanged(j, wl):
		return stepUpdatePriority
	case !j.managedElsewhere() && !conditionIs(wl, podsReadyCondition(v)):
		// A job run in another cluster has its pods there.
		return stepPodsReady
	}
	return stepNone
}

// decideDeleted: the Workload is being deleted. The job stops; once it has,
// the Workload may go.
func decideDeleted(v view) step {
	switch {
	case !v.job.IsSuspended():
		return stepStop
	case hasFinalizer(v.wl):
		return stepDropFinalizer
	}
	return stepNone
}

// decideMissing: the job has no Workload. It queues suspended; a prebuilt
// one is MultiKueue's to create.
func decideMissing(v view) step {
	switch {
	case !v.job.IsSuspended():
		return stepStop // running without a Workload: it queues first
	case v.job.prebuiltWorkload() != "":
		return stepNone
	case v.active():
		return stepNone // the suspended job's pods are being deleted
	}
	return stepCreate
}

// decideSuspended: the job waits for its Workload's admission.
func decideSuspended(v view) step {
	j, wl := v.job, v.wl
	prebuilt := j.prebuiltWorkload() != ""
	switch {
	case stageOf(wl) == stageAdmitted:
		if refusedAdmission(j, wl) != "" {
			return stepRefuse
		}
		return stepStart
	case !isTrue(wl, workloadQuotaReserved) && !equivalentPodSets(wl.Spec.PodSets, j.PodSets()):
		if prebuilt {
			return stepOutOfSync
		}
		return stepRecreate
	case string(wl.Spec.QueueName) != j.KueueQueueName() && !prebuilt:
		return stepUpdateQueue
	case priorityChanged(j, wl):
		return stepUpdatePriority
	}
	return stepNone
}

// refusedAdmission says why the job cannot run with the pod counts its
// Workload was admitted with, "" when it can.
func refusedAdmission(j job, wl *workload) string {
	if wl.Status.Admission == nil {
		return ""
	}
	for _, a := range wl.Status.Admission.PodSetAssignments {
		count := ptr.Deref(a.Count, podSetCount(wl, a.Name))
		if why := j.refusedCount(string(a.Name), count); why != "" {
			return why
		}
	}
	return ""
}

func podSetCount(wl *workload, name kueueapi.PodSetReference) int32 {
	for _, ps := range wl.Spec.PodSets {
		if ps.Name == name {
			return ps.Count
		}
	}
	return 0
}

// priorityChanged reports whether the job's priority-class label names
// another WorkloadPriorityClass than its Workload's. As in Kueue, only a
// Workload whose priority is a WorkloadPriorityClass (or none, before it
// reserves quota: the API refuses to add one after) follows the label; a
// prebuilt Workload follows its manager's, and a removed label leaves the
// priority as it is.
func priorityChanged(j job, wl *workload) bool {
	label := j.Labels[paddlev1.KueuePriorityClassLabel]
	if label == "" || j.prebuiltWorkload() != "" {
		return false
	}
	ref := wl.Spec.PriorityClassRef
	switch {
	case ref == nil:
		return !isTrue(wl, workloadQuotaReserved)
	case ref.Kind != kueueapi.WorkloadPriorityClassKind:
		return false
	}
	return ref.Name != label
}

// podsReadyCondition is the Workload's PodsReady condition for a running
// job: True once every pod runs ready or has succeeded.
func podsReadyCondition(v view) metav1.Condition {
	was := findCondition(v.wl, workloadPodsReady)
	if v.job.PodsReady(v.pods) {
		reason := workloadStarted
		if was.Reason == workloadWaitForRecovery || was.Reason == workloadRecovered {
			reason = workloadRecovered
		}
		return metav1.Condition{Type: workloadPodsReady, Status: metav1.ConditionTrue, Reason: reason, Message: "All pods reached readiness and the workload is running"}
	}
	if was.Status == metav1.ConditionTrue || was.Reason == workloadWaitForRecovery {
		return metav1.Condition{Type: workloadPodsReady, Status: metav1.ConditionFalse, Reason: workloadWaitForRecovery, Message: "At least one pod has failed, waiting for recovery"}
	}
	return metav1.Condition{Type: workloadPodsReady, Status: metav1.ConditionFalse, Reason: workloadWaitForStart, Message: "Not all pods are ready or succeeded"}
}

// stage is where a Workload is in Kueue's admission, read from its
// conditions here alone: decide acts on it, holdMessage explains it.
type stage int

const (
	// stageQueued: waiting for quota and admission.
	stageQueued stage = iota
	// stageAdmitted: admitted and not evicted: the job may run.
	stageAdmitted
	// stageEvicted: evicted (preempted, deactivated, a timeout): the job
	// stops, and queues again once its pods are gone.
	stageEvicted
	// stageFinished: done, with or without the job.
	stageFinished
)

func stageOf(wl *workload) stage {
	switch {
	case isTrue(wl, workloadFinished):
		return stageFinished
	case isTrue(wl, workloadEvicted):
		return stageEvicted
	case isTrue(wl, workloadAdmitted):
		return stageAdmitted
	}
	return stageQueued
}

func isTrue(wl *workload, t string) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, t)
}

func conditionIs(wl *workload, c metav1.Condition) bool {
	have := findCondition(wl, c.Type)
	return have.Status == c.Status && have.Reason == c.Reason
}

func findCondition(wl *workload, t string) metav1.Condition {
	if wl != nil {
		if c := meta.FindStatusCondition(wl.Status.Conditions, t); c != nil {
			return *c
		}
	}
	return metav1.Condition{}
}

func hasFinalizer(wl *workload) bool {
	for _, f := range wl.Finalizers {
		if f == kueueResourceInUseFinalizer {
			return true
		}
	}
	return false
}
