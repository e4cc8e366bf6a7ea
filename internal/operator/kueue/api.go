package kueue

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The part of Kueue's kueue.x-k8s.io/v1beta2 API the integration reads and
// writes, mirrored field for field (json names as Kueue's). Importing
// sigs.k8s.io/kueue would pin this module's Kubernetes libraries to Kueue's;
// the objects travel as unstructured and are decoded into these types, so a
// field Kueue adds is kept on update and never lost. The end-to-end tests
// run these against the real Kueue (v0.19.2).

var (
	// WorkloadGVK is Kueue's Workload: one per queued PaddleJob.
	WorkloadGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}
	// ResourceFlavorGVK holds the node labels and tolerations of a flavor
	// Kueue assigned a pod set.
	ResourceFlavorGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "ResourceFlavor"}
	// WorkloadPriorityClassGVK is the priority a job's
	// kueue.x-k8s.io/priority-class label names.
	WorkloadPriorityClassGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "WorkloadPriorityClass"}
)

// Kueue's names the protocol uses.
const (
	kueueResourceInUseFinalizer = "kueue.x-k8s.io/resource-in-use"
	kueueJobUIDLabel            = "kueue.x-k8s.io/job-uid"
	kueuePodSetLabel            = "kueue.x-k8s.io/podset"
	// kueuePrebuiltWorkloadKey (an annotation, or a label) names the
	// Workload a job is to use instead of creating one: MultiKueue sets it
	// on the copy it creates in a worker cluster, whose Workload it has
	// created first.
	kueuePrebuiltWorkloadKey = "kueue.x-k8s.io/prebuilt-workload-name"

	workloadQuotaReserved = "QuotaReserved"
	workloadAdmitted      = "Admitted"
	workloadEvicted       = "Evicted"
	workloadRequeued      = "Requeued"
	workloadFinished      = "Finished"
	workloadPodsReady     = "PodsReady"

	// Reasons Kueue gives or expects.
	workloadPending           = "Pending"
	workloadNoReservation     = "NoReservation"
	workloadPreempted         = "Preempted"
	workloadNodeFailures      = "NodeFailures"
	workloadSucceeded         = "Succeeded"
	workloadFailed            = "Failed"
	workloadOutOfSync         = "OutOfSync"
	workloadFailedToStart     = "FailedToStart"
	workloadStarted           = "Started"
	workloadRecovered         = "Recovered"
	workloadWaitForStart      = "WaitForStart"
	workloadWaitForRecovery   = "WaitForRecovery"
	workloadPriorityClassKind = "WorkloadPriorityClass"
	podPriorityClassGroup     = "scheduling.k8s.io"
	podPriorityClassKind      = "PriorityClass"
)

// workload holds its metadata in a named field: embedded, controller-gen
// would take the type for one of this module's CRDs.
type workload struct {
	Metadata metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     workloadSpec      `json:"spec"`
	Status   workloadStatus    `json:"status,omitempty"`
}

type workloadSpec struct {
	PodSets          []podSet          `json:"podSets"`
	QueueName        string            `json:"queueName,omitempty"`
	PriorityClassRef *priorityClassRef `json:"priorityClassRef,omitempty"`
	Priority         *int32            `json:"priority,omitempty"`
	Active           *bool             `json:"active,omitempty"`
}

type priorityClassRef struct {
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Name  string `json:"name,omitempty"`
}

type podSet struct {
	Name     string                 `json:"name"`
	Template corev1.PodTemplateSpec `json:"template"`
	Count    int32                  `json:"count"`
	// MinCount lets Kueue admit fewer pods (partial admission).
	MinCount *int32 `json:"minCount,omitempty"`
}

type workloadStatus struct {
	Conditions      []metav1.Condition    `json:"conditions,omitempty"`
	Admission       *admission            `json:"admission,omitempty"`
	AdmissionChecks []admissionCheckState `json:"admissionChecks,omitempty"`
}

type admission struct {
	ClusterQueue      string             `json:"clusterQueue"`
	PodSetAssignments []podSetAssignment `json:"podSetAssignments"`
}

type podSetAssignment struct {
	Name    string                         `json:"name"`
	Flavors map[corev1.ResourceName]string `json:"flavors,omitempty"`
	Count   *int32                         `json:"count,omitempty"`
}

type admissionCheckState struct {
	Name          string         `json:"name,omitempty"`
	PodSetUpdates []podSetUpdate `json:"podSetUpdates,omitempty"`
}

// podSetUpdate is what Kueue (a flavor, an admission check) asks of a pod
// set's pods once admitted.
type podSetUpdate struct {
	Name         string              `json:"name"`
	Labels       map[string]string   `json:"labels,omitempty"`
	Annotations  map[string]string   `json:"annotations,omitempty"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

type resourceFlavorSpec struct {
	NodeLabels  map[string]string   `json:"nodeLabels,omitempty"`
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

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
