package kueue

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kueueapi "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/constants"
	kueuecontrollerconstants "sigs.k8s.io/kueue/pkg/controller/constants"
)

// Kueue's kueue.x-k8s.io/v1beta2 types and names come from its API module
// (sigs.k8s.io/kueue, pinned in go.mod at the newest release built on this
// module's Kubernetes libraries). The objects travel as unstructured and are
// decoded into those types, so a field a newer Kueue adds is kept on update
// and never lost: the end-to-end tests run against Kueue v0.19.2, whose
// v1beta2 Workload has the same fields the integration reads.

type (
	workload           = kueueapi.Workload
	workloadStatus     = kueueapi.WorkloadStatus
	podSet             = kueueapi.PodSet
	podSetUpdate       = kueueapi.PodSetUpdate
	priorityClassRef   = kueueapi.PriorityClassRef
	resourceFlavorSpec = kueueapi.ResourceFlavorSpec
)

var (
	// WorkloadGVK is Kueue's Workload: one per queued PaddleJob.
	WorkloadGVK = kueueapi.GroupVersion.WithKind("Workload")
	// ResourceFlavorGVK holds the node labels and tolerations of a flavor
	// Kueue assigned a pod set.
	ResourceFlavorGVK = kueueapi.GroupVersion.WithKind("ResourceFlavor")
	// WorkloadPriorityClassGVK is the priority a job's
	// kueue.x-k8s.io/priority-class label names.
	WorkloadPriorityClassGVK = kueueapi.GroupVersion.WithKind("WorkloadPriorityClass")
)

// Kueue's names the protocol uses.
const (
	kueueResourceInUseFinalizer = kueueapi.ResourceInUseFinalizerName
	kueueJobUIDLabel            = kueuecontrollerconstants.JobUIDLabel
	kueuePodSetLabel            = kueueconstants.PodSetLabel
	// kueuePrebuiltWorkloadKey (an annotation, or a label) names the
	// Workload a job is to use instead of creating one: MultiKueue sets it
	// on the copy it creates in a worker cluster, whose Workload it has
	// created first.
	kueuePrebuiltWorkloadKey = kueuecontrollerconstants.PrebuiltWorkloadLabel

	workloadQuotaReserved = kueueapi.WorkloadQuotaReserved
	workloadAdmitted      = kueueapi.WorkloadAdmitted
	workloadEvicted       = kueueapi.WorkloadEvicted
	workloadRequeued      = kueueapi.WorkloadRequeued
	workloadFinished      = kueueapi.WorkloadFinished
	workloadPodsReady     = kueueapi.WorkloadPodsReady

	workloadPreempted       = kueueapi.WorkloadEvictedByPreemption
	workloadNodeFailures    = kueueapi.WorkloadEvictedDueToNodeFailures
	workloadSucceeded       = kueueapi.WorkloadFinishedReasonSucceeded
	workloadFailed          = kueueapi.WorkloadFinishedReasonFailed
	workloadOutOfSync       = kueueapi.WorkloadFinishedReasonOutOfSync
	workloadStarted         = kueueapi.WorkloadStarted
	workloadRecovered       = kueueapi.WorkloadRecovered
	workloadWaitForStart    = kueueapi.WorkloadWaitForStart
	workloadWaitForRecovery = kueueapi.WorkloadWaitForRecovery

	// Reasons Kueue writes that its API package does not export (they live
	// in its controllers).
	workloadPending       = "Pending"
	workloadNoReservation = "NoReservation"
	workloadFailedToStart = "FailedToStart"
)

// fromUnstructured decodes an object into a mirror type, ignoring the
// fields the mirror leaves out.
func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func newUnstructured(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}
