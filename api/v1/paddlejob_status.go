package v1

// The status of a PaddleJob, as the operator observes it.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PaddleJobStatus is the observed state of a PaddleJob.
type PaddleJobStatus struct {
	// phase is a one-word summary of the job: Pending, Starting, Running,
	// Suspended, Queued (waiting for Kueue to admit it), Completed or Failed.
	// +optional
	Phase PaddleJobPhase `json:"phase,omitempty"`

	// mode is the training mode derived from the roles: PS, Collective or Single.
	// +optional
	Mode PaddleJobMode `json:"mode,omitempty"`

	// ps counts the parameter-server pods by state.
	// +optional
	PS *ReplicaStatus `json:"ps,omitempty"`

	// worker counts the worker pods by state.
	// +optional
	Worker *ReplicaStatus `json:"worker,omitempty"`

	// heter counts the heterogeneous trainer pods by state.
	// +optional
	Heter *ReplicaStatus `json:"heter,omitempty"`

	// conditions are the standard conditions of the job: Created, Running,
	// Succeeded, Failed, Suspended, PodGroupAdmitted and Restarting. Their reason and
	// message say why, naming the pod, container and exit code behind a
	// failure.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// startTime is when the operator first saw the job active (created, or
	// resumed from suspension), whether or not its pods could be created; the
	// activeDeadlineSeconds count from it.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job completed or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// restartCount is how many times the job was restarted as a whole and
	// its failed pods were recreated, with the restarts in place those pods
	// had. The restarts in place of the current pods are in each role's
	// restarts; the two together count against spec.backoffLimit.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty"`

	// lastRestartTime is when the operator last restarted the job or
	// recreated a failed pod; the pods are created again an exponential
	// backoff after it. Microseconds: the backoff starts at a second.
	// +optional
	LastRestartTime *metav1.MicroTime `json:"lastRestartTime,omitempty"`

	// recreatingPods are the UIDs of the pods whose restart is counted and
	// whose deletion is under way (the failed pods, or every pod of a job
	// restarted as a whole), so each failure is counted once.
	// +listType=set
	// +optional
	RecreatingPods []string `json:"recreatingPods,omitempty"`

	// hostPorts are the port ranges held by the job's pods where pods share
	// their node's address (Host intranet), kept while the job is suspended
	// so its pods come back on the same ports.
	// +listType=map
	// +listMapKey=pod
	// +optional
	HostPorts []HostPortRange `json:"hostPorts,omitempty"`

	// progress is how far the training is and its latest metrics, as the
	// training program itself last reported them to the operator (see
	// docs/progress.md). Absent until a report arrives. The operator copies
	// reports into the status at most every few seconds (its
	// --progress-status-interval), so this may lag the program slightly.
	// +optional
	Progress *JobProgress `json:"progress,omitempty"`
}

// MaxProgressMetrics bounds the metrics a progress report and the status hold.
const MaxProgressMetrics = 16

// JobProgress is a training program's latest report of its progress.
type JobProgress struct {
	// percent is how much of the training is done, 0 to 100, rounded down.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`

	// estimatedSecondsRemaining is how long the training should still take:
	// the program's own estimate, else the operator's from the rate at which
	// percent rose since the first report.
	// +kubebuilder:validation:Minimum=0
	// +optional
	EstimatedSecondsRemaining *int64 `json:"estimatedSecondsRemaining,omitempty"`

	// epoch is the current epoch (pass over the data), counted from 1.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Epoch *int64 `json:"epoch,omitempty"`

	// totalEpochs is how many epochs the training runs, where known.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TotalEpochs *int64 `json:"totalEpochs,omitempty"`

	// step is the current step (batch) count, where known.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Step *int64 `json:"step,omitempty"`

	// metrics are the latest values of the named metrics the program
	// reported (loss, auc, accuracy...), in the order it named them; at most
	// 16.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Metrics []ProgressMetric `json:"metrics,omitempty"`

	// reporter is the pod whose report this is. Each pod of the job may
	// report; the status follows the first worker that does (the lowest
	// role and index), so that the progress of several trainers is not
	// interleaved.
	// +optional
	Reporter string `json:"reporter,omitempty"`

	// lastUpdateTime is when the operator received the report.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
}

// ProgressMetric is the latest value of one named metric.
type ProgressMetric struct {
	// name names the metric: a letter or '_', then letters, digits, '_',
	// '.', '-' or '/'; at most 64 characters.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_./-]{0,63}$`
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// value is the metric's value as a decimal number (a float's shortest
	// representation with at most 6 significant digits: 0.734521, 1.5e-05).
	// +kubebuilder:validation:MaxLength=32
	Value string `json:"value"`
}

// HostPortRange is the port range of one pod of a Host-intranet job.
type HostPortRange struct {
	// pod is the pod's name.
	Pod string `json:"pod"`
	// ports is the range, first-last.
	Ports string `json:"ports"`
}

// ReplicaStatus counts the pods of one role by state.
type ReplicaStatus struct {
	// pending pods are not scheduled yet.
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// starting pods are scheduled but not running yet (initialising, pulling
	// images, or waiting for the job's endpoints).
	// +optional
	Starting int32 `json:"starting,omitempty"`
	// running pods have all their containers started.
	// +optional
	Running int32 `json:"running,omitempty"`
	// failed pods have terminated with a failure.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// succeeded pods have terminated successfully.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// stopped pods were still pending, starting or running when the job
	// finished, and the operator stopped them: the parameter servers and
	// heter trainers once every worker succeeded, the other pods of a
	// failed job. Once the job finished, the counts are those it finished
	// with and ready is "0/replicas".
	// +optional
	Stopped int32 `json:"stopped,omitempty"`
	// unknown pods are in a state the node could not report.
	// +optional
	Unknown int32 `json:"unknown,omitempty"`
	// restarts is the sum of the restart counts of the role's current pods'
	// containers.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// ready is "running/replicas", shown by kubectl get.
	// +optional
	Ready string `json:"ready,omitempty"`
}

// Reasons of a False Running condition that hold a job in Pending: its
// message names the pods and quotes the scheduler or the kubelet.
const (
	// ReasonUnschedulable: the scheduler cannot place some of the job's pods.
	ReasonUnschedulable = "Unschedulable"
	// ReasonCannotStart: the kubelet cannot start some pods' containers (an
	// image it cannot pull, a missing ConfigMap or Secret, ...).
	ReasonCannotStart = "CannotStart"
)
