package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaType names a role of a PaddleJob. It is the <role> part of the pod
// names <job>-<role>-<index>.
type ReplicaType string

const (
	// ReplicaPS is the parameter-server role (PADDLE_TRAINING_ROLE=PSERVER).
	ReplicaPS ReplicaType = "ps"
	// ReplicaWorker is the trainer role (PADDLE_TRAINING_ROLE=TRAINER).
	ReplicaWorker ReplicaType = "worker"
	// ReplicaHeter is the heterogeneous trainer role (PADDLE_TRAINING_ROLE=HETER_TRAINER).
	ReplicaHeter ReplicaType = "heter"
)

// ReplicaTypes lists the roles in the order the operator handles them: status,
// endpoint lists and pod creation always follow this order.
var ReplicaTypes = []ReplicaType{ReplicaPS, ReplicaWorker, ReplicaHeter}

// CleanPodPolicy says which pods are deleted once a job has finished.
// +kubebuilder:validation:Enum=Always;Never;OnFailure;OnCompletion
type CleanPodPolicy string

const (
	// CleanPodPolicyAlways deletes the job's pods when it finishes, whatever the outcome.
	CleanPodPolicyAlways CleanPodPolicy = "Always"
	// CleanPodPolicyNever keeps the job's terminated pods for inspection.
	CleanPodPolicyNever CleanPodPolicy = "Never"
	// CleanPodPolicyOnFailure deletes the job's pods only when the job failed.
	CleanPodPolicyOnFailure CleanPodPolicy = "OnFailure"
	// CleanPodPolicyOnCompletion deletes the job's pods only when the job completed.
	CleanPodPolicyOnCompletion CleanPodPolicy = "OnCompletion"
)

// Intranet is how the pods of a job address each other.
// +kubebuilder:validation:Enum=PodIP;Service;Host
type Intranet string

const (
	// IntranetPodIP addresses pods by their pod IP. Training starts once every
	// pod of the job has an IP, so the endpoint lists are final.
	IntranetPodIP Intranet = "PodIP"
	// IntranetService addresses pods by their stable DNS name
	// <pod>.<job>.<namespace>.svc through the job's headless Service.
	IntranetService Intranet = "Service"
	// IntranetHost runs pods in the host network namespace and addresses them
	// by node IP; every pod gets its own port range so pods sharing a node never
	// collide.
	IntranetHost Intranet = "Host"
)

// RestartPolicy says what happens when a pod of a role fails.
// +kubebuilder:validation:Enum=Never;OnFailure;ExitCode
type RestartPolicy string

const (
	// RestartPolicyNever fails the job when a pod of the role fails.
	RestartPolicyNever RestartPolicy = "Never"
	// RestartPolicyOnFailure restarts a failed container in place (the pod's
	// restartPolicy is OnFailure) and recreates a pod that fails anyway
	// (evicted, preempted, its node lost).
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	// RestartPolicyExitCode recreates a pod whose container failed with a
	// retryable exit code (by default 129-255: killed by a signal, as when
	// preempted) or that failed without one (evicted); any other exit code
	// fails the job.
	RestartPolicyExitCode RestartPolicy = "ExitCode"
)

// RestartScope says what a restartable pod failure restarts.
// +kubebuilder:validation:Enum=Job;Pod
type RestartScope string

const (
	// RestartScopeJob stops every pod of the job and recreates them all,
	// counted as one restart. Parameter-server training needs it: a lone new
	// parameter server has empty tables, and a lone new trainer waits at
	// start-up barriers its peers passed long ago.
	RestartScopeJob RestartScope = "Job"
	// RestartScopePod recreates the failed pod alone (or restarts its
	// container in place under restartPolicy OnFailure), as collective and
	// elastic training expect.
	RestartScopePod RestartScope = "Pod"
)

// PaddleJobMode is the distributed training mode of a job, derived from its roles.
type PaddleJobMode string

const (
	// PaddleJobModePS is parameter-server training: spec.ps and spec.worker (and
	// optionally spec.heter) are set.
	PaddleJobModePS PaddleJobMode = "PS"
	// PaddleJobModeCollective is data-parallel training among several workers.
	PaddleJobModeCollective PaddleJobMode = "Collective"
	// PaddleJobModeSingle is a job with a single worker and no parameter servers.
	PaddleJobModeSingle PaddleJobMode = "Single"
)

// PaddleJobPhase is a one-word summary of where a job is in its life.
type PaddleJobPhase string

const (
	// PaddleJobPending: its pods are being created, or some cannot be
	// scheduled or started (the Running condition says why, naming them).
	PaddleJobPending PaddleJobPhase = "Pending"
	// PaddleJobStarting: every pod exists; some are not running yet.
	PaddleJobStarting PaddleJobPhase = "Starting"
	// PaddleJobRunning: every pod of the job is running.
	PaddleJobRunning PaddleJobPhase = "Running"
	// PaddleJobCompleted: every worker succeeded. Terminal.
	PaddleJobCompleted PaddleJobPhase = "Completed"
	// PaddleJobFailed: the job failed; its Failed condition says why. Terminal.
	PaddleJobFailed PaddleJobPhase = "Failed"
	// PaddleJobSuspended: spec.suspend is set; the job has no pods.
	PaddleJobSuspended PaddleJobPhase = "Suspended"
	// PaddleJobQueued: the job waits in a Kueue queue (label
	// kueue.x-k8s.io/queue-name) for admission; it has no pods. Its
	// Suspended condition, reason Queued, names the queue and why it waits.
	PaddleJobQueued PaddleJobPhase = "Queued"
)

// Condition types of a PaddleJob.
const (
	// JobCreated is True once every pod the spec asks for exists.
	JobCreated = "Created"
	// JobRunning is True while every pod of the job is running.
	JobRunning = "Running"
	// JobSucceeded is True once the job completed successfully.
	JobSucceeded = "Succeeded"
	// JobFailed is True once the job failed; reason and message name the pod,
	// container and exit code behind the failure.
	JobFailed = "Failed"
	// JobSuspended is True while spec.suspend holds the job's pods back.
	JobSuspended = "Suspended"
	// JobPodGroupAdmitted is True once the gang scheduler admitted the job's
	// pod group; pods are created only then.
	JobPodGroupAdmitted = "PodGroupAdmitted"
	// JobRestarting is True while the job's failed pods (restartScope Pod)
	// or all its pods (restartScope Job) are being recreated, and False once
	// they all run again; its message names the failure behind the last
	// restart. Absent until the first restart.
	JobRestarting = "Restarting"
)

// Labels and annotations the operator puts on the objects it creates.
const (
	// LabelJobName is the name of the PaddleJob a pod or Service belongs to.
	LabelJobName = "batch.paddlepaddle.org/job-name"
	// LabelReplicaType is the role of a pod: ps, worker or heter.
	LabelReplicaType = "batch.paddlepaddle.org/replica-type"
	// LabelReplicaIndex is the index of a pod within its role.
	LabelReplicaIndex = "batch.paddlepaddle.org/replica-index"
	// AnnotationPorts is the port range of a pod, "first-last", fixed when the
	// pod is created. Its first port is PADDLE_PORT.
	AnnotationPorts = "batch.paddlepaddle.org/ports"
	// AnnotationEndpoints is set on a pod once the job's endpoint lists are
	// published; its value identifies the published lists. Pods that start
	// before all addresses are known wait for it.
	AnnotationEndpoints = "batch.paddlepaddle.org/endpoints"
	// AnnotationSpecHash identifies what a pod was made from: its role's
	// template and the job-wide fields its pods depend on. While a pod of an
	// older spec lives, the operator makes none from a newer one.
	AnnotationSpecHash = "batch.paddlepaddle.org/spec-hash"
)

// Kueue's labels on a PaddleJob (docs/kueue.md).
const (
	// KueueQueueNameLabel sends a job to a Kueue LocalQueue: the job is
	// created suspended and runs once Kueue admits its Workload.
	KueueQueueNameLabel = "kueue.x-k8s.io/queue-name"
	// KueuePriorityClassLabel names the job's Kueue WorkloadPriorityClass.
	KueuePriorityClassLabel = "kueue.x-k8s.io/priority-class"
	// KueueFrameworkName is how Kueue's configuration names PaddleJobs, in
	// integrations.externalFrameworks.
	KueueFrameworkName = "PaddleJob.v1.batch.paddlepaddle.org"
)

// Values of spec.managedBy.
const (
	// ManagedByOperator is this operator, also meant by an empty managedBy.
	ManagedByOperator = "batch.paddlepaddle.org/paddlejob-operator"
	// ManagedByMultiKueue is Kueue's MultiKueue, which runs the job on a
	// worker cluster and mirrors its status back.
	ManagedByMultiKueue = "kueue.x-k8s.io/multikueue"
)

// MaxJobNameLength is the longest PaddleJob name: pod names
// <name>-worker-<index> (index < MaxReplicas) must stay DNS labels of at most
// 63 characters. Keep in sync with the validation rule on PaddleJob.
const MaxJobNameLength = 51

// MaxReplicas is the largest replica count of one role.
const MaxReplicas = 10000

// PaddleJobSpec is the desired state of a PaddleJob.
//
// +kubebuilder:validation:XValidation:rule="(has(self.intranet) && self.intranet == 'Host') || !has(self.ps) || !has(self.ps.template.spec) || !has(self.ps.template.spec.hostNetwork) || !self.ps.template.spec.hostNetwork",message="spec.ps.template.spec.hostNetwork may be true only with spec.intranet: Host, where the operator sets it and hands each pod host ports of its own"
// +kubebuilder:validation:XValidation:rule="(has(self.intranet) && self.intranet == 'Host') || !has(self.worker) || !has(self.worker.template.spec) || !has(self.worker.template.spec.hostNetwork) || !self.worker.template.spec.hostNetwork",message="spec.worker.template.spec.hostNetwork may be true only with spec.intranet: Host, where the operator sets it and hands each pod host ports of its own"
// +kubebuilder:validation:XValidation:rule="(has(self.intranet) && self.intranet == 'Host') || !has(self.heter) || !has(self.heter.template.spec) || !has(self.heter.template.spec.hostNetwork) || !self.heter.template.spec.hostNetwork",message="spec.heter.template.spec.hostNetwork may be true only with spec.intranet: Host, where the operator sets it and hands each pod host ports of its own"
// +kubebuilder:validation:XValidation:rule="has(self.managedBy) == has(oldSelf.managedBy) && (!has(self.managedBy) || self.managedBy == oldSelf.managedBy)",message="spec.managedBy is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.worker)",message="spec.worker is required: every PaddleJob runs at least one worker (add spec.ps as well for parameter-server mode)"
// +kubebuilder:validation:XValidation:rule="!has(self.heter) || (has(self.ps) && has(self.worker))",message="spec.heter needs spec.ps and spec.worker: heterogeneous training is a parameter-server mode"
// +kubebuilder:validation:XValidation:rule="!has(self.ps) || !(has(self.elasticPolicy) || (has(self.elastic) && self.elastic > 0) || (has(self.worker) && has(self.worker.limits)))",message="elastic training (spec.elasticPolicy, spec.elastic > 0 or spec.worker.limits) is collective only: Paddle's elastic launcher runs collective workers and cannot run parameter servers; remove spec.ps, or the elastic fields"
// +kubebuilder:validation:XValidation:rule="!has(self.cleanPolicy) || !has(self.cleanPodPolicy) || self.cleanPolicy == self.cleanPodPolicy",message="spec.cleanPolicy is a deprecated alias of spec.cleanPodPolicy and disagrees with it: set only spec.cleanPodPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || !has(self.elasticPolicy.minReplicas) || !has(self.worker) || self.worker.replicas >= self.elasticPolicy.minReplicas",message="spec.worker.replicas is below spec.elasticPolicy.minReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || !has(self.elasticPolicy.maxReplicas) || !has(self.worker) || self.worker.replicas <= self.elasticPolicy.maxReplicas",message="spec.worker.replicas is above spec.elasticPolicy.maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.worker) || !has(self.worker.limits) || self.worker.replicas <= self.worker.limits",message="spec.worker.replicas is above spec.worker.limits (the elastic maximum)"
// +kubebuilder:validation:XValidation:rule="!has(self.worker) || !has(self.worker.requests) || self.worker.replicas >= self.worker.requests",message="spec.worker.replicas is below spec.worker.requests (the elastic minimum)"
// +kubebuilder:validation:XValidation:rule="!has(self.schedulingPolicy) || !has(self.schedulingPolicy.minAvailable) || self.schedulingPolicy.minAvailable <= (has(self.ps) ? self.ps.replicas : 0) + (has(self.worker) ? self.worker.replicas : 0) + (has(self.heter) ? self.heter.replicas : 0)",message="must be at most the pods of the job: the replicas of spec.ps, spec.worker and spec.heter together",fieldPath=".schedulingPolicy.minAvailable"
type PaddleJobSpec struct {
	// cleanPodPolicy says which pods are deleted once the job has finished:
	// Always (whatever the outcome), Never (keep them for inspection),
	// OnFailure (only if the job failed) or OnCompletion (only if it
	// completed). Never is recommended while debugging, OnCompletion in
	// production. Pods still running when the job finishes (parameter
	// servers, heter trainers) are always stopped. Defaults to Never.
	// +optional
	CleanPodPolicy CleanPodPolicy `json:"cleanPodPolicy,omitempty"`

	// cleanPolicy is a deprecated alias of cleanPodPolicy, accepted so that
	// manifests written for paddle-operator keep working. Use cleanPodPolicy.
	// +optional
	CleanPolicy CleanPodPolicy `json:"cleanPolicy,omitempty"`

	// schedulingPolicy configures gang scheduling of the job's pods (for
	// example with Volcano): all pods are scheduled together or not at all.
	// +optional
	SchedulingPolicy *SchedulingPolicy `json:"schedulingPolicy,omitempty"`

	// intranet is how the pods of the job address each other: PodIP (pod IPs;
	// training starts once every pod has one), Service (stable DNS names through
	// the job's headless Service) or Host (host network and node IPs, with a
	// distinct port range per pod).
	// +kubebuilder:default=PodIP
	// +optional
	Intranet Intranet `json:"intranet,omitempty"`

	// withGloo enables Gloo for CPU collective communication and barriers:
	// 0 disables it, 1 starts it on the workers only, 2 on workers and
	// parameter servers. 1 is recommended when using Gloo. Paddle builds the
	// servers' group and the group of all processes only over a directory
	// every pod shares: at 2 set PADDLE_GLOO_FS_PATH in the ps and worker
	// templates' env, to one directory on a volume all the job's pods mount
	// read-write (a ReadWriteMany PersistentVolumeClaim, NFS); the operator
	// then uses Paddle's file-system rendezvous. Without it level 2 works as
	// 1 (the HTTP store on ps-0) and admission warns.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2
	// +optional
	WithGloo *int32 `json:"withGloo,omitempty"`

	// elastic is the elastic level of the job, as paddle-operator spells it:
	// 0 or unset disables elastic training, 1 or more enables fault-tolerant
	// elastic training of the workers (see elasticPolicy).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Elastic *int32 `json:"elastic,omitempty"`

	// elasticPolicy makes the job elastic: its workers may be scaled between
	// minReplicas and maxReplicas while it runs and a failed worker is
	// replaced while backoffLimit allows. Paddle's launcher
	// (python -m paddle.distributed.launch) rendezvouses in etcd
	// (PADDLE_MASTER=etcd://host:port, PADDLE_NNODES=min:max) and restarts
	// training whenever the workers change.
	// +optional
	ElasticPolicy *ElasticPolicy `json:"elasticPolicy,omitempty"`

	// backoffLimit is how many restarts and recreations of the job's pods,
	// counted together, are tolerated before the job fails with reason
	// BackoffLimitExceeded. Only roles whose restartPolicy is OnFailure or
	// ExitCode restart pods. A restart of the whole job counts once.
	// +kubebuilder:default=6
	// +kubebuilder:validation:Minimum=0
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// restartScope says what a pod failure its role's restartPolicy restarts
	// brings back: Job stops every pod of the job and recreates them all
	// (one restart), Pod recreates the failed pod alone (or restarts its
	// container in place under OnFailure). Defaults to Job in
	// parameter-server mode (spec.ps set), where a lone new parameter server
	// has empty tables and a lone new trainer waits at barriers its peers
	// passed, and to Pod otherwise (collective training; elastic jobs, whose
	// membership Paddle's launcher handles).
	// +optional
	RestartScope RestartScope `json:"restartScope,omitempty"`

	// progressDeadlineSeconds is how long a running job may go without a
	// progress report from its training program (paddlejob.report_progress,
	// see docs/progress.md) before it is treated as failed with reason
	// ProgressDeadlineExceeded: the clock starts when every pod of the job
	// runs, and again at each report. The job is then restarted as a whole
	// when its workers' restartPolicy restarts pods (OnFailure or ExitCode)
	// and backoffLimit allows, else it fails. Set it only for programs that
	// report progress; it catches a training that hangs (a deadlock at
	// start-up, a stuck collective). Unset, nothing is watched.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3153600000
	// +optional
	ProgressDeadlineSeconds *int64 `json:"progressDeadlineSeconds,omitempty"`

	// activeDeadlineSeconds is how long the job may run, from status.startTime
	// (when the operator first saw it active, whether or not its pods could be
	// created), before it is failed with reason DeadlineExceeded and its pods
	// stopped. At most 3153600000 (100 years).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3153600000
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished deletes the job (and its pods) this many seconds
	// after it completed or failed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// suspend stops the job: its pods are deleted and it waits in phase
	// Suspended; setting it back to false recreates them with the same names
	// and ports. The active deadline counts from the last resume.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// managedBy names the controller that runs the job. Unset, or
	// batch.paddlepaddle.org/paddlejob-operator, is this operator; any other
	// value makes the operator leave the job alone: that controller creates
	// its pods and writes its status. Kueue's MultiKueue sets
	// kueue.x-k8s.io/multikueue to run the job on a worker cluster.
	// Immutable.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`

	// ps describes the parameter servers. Setting it selects parameter-server
	// mode, which also needs worker.
	// +optional
	PS *ReplicaSpec `json:"ps,omitempty"`

	// worker describes the trainers. Every job has workers; without ps they
	// train collectively (data parallel), or alone when there is one.
	// +optional
	Worker *ReplicaSpec `json:"worker,omitempty"`

	// heter describes heterogeneous trainers (for example GPU stages of a
	// CPU parameter-server job). It needs ps and worker.
	// +optional
	Heter *ReplicaSpec `json:"heter,omitempty"`
}

// ReplicaSpec describes the pods of one role of a PaddleJob.
//
// +kubebuilder:validation:XValidation:rule="has(self.template.spec) && size(self.template.spec.containers) > 0",message="template.spec.containers must hold at least one container"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.restartPolicy) || self.template.spec.restartPolicy != 'Always'",message="template.spec.restartPolicy must be Never or OnFailure: the pods of a training job run to completion"
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || self.requests <= self.limits",message="requests (minimal replicas) must not exceed limits (maximal replicas)"
// +kubebuilder:validation:XValidation:rule="!has(self.retryableExitCodes) || (has(self.restartPolicy) && self.restartPolicy == 'ExitCode')",message="retryableExitCodes needs restartPolicy ExitCode"
type ReplicaSpec struct {
	// replicas is the number of pods of this role, named <job>-<role>-0 to
	// <job>-<role>-<replicas-1>. It can be changed while the job runs.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Replicas int32 `json:"replicas"`

	// template is the pod template of this role. The operator adds the
	// environment of the Paddle contract (PADDLE_* variables), labels, a
	// hostname and subdomain, and a named port; values the template sets
	// itself are kept.
	Template corev1.PodTemplateSpec `json:"template"`

	// restartPolicy says what happens when a pod of this role fails: Never
	// (the job fails), OnFailure (the container restarts in place; a pod that
	// fails anyway is recreated) or ExitCode (the pod is recreated when its
	// exit code is retryable, otherwise the job fails). Restarts count against
	// spec.backoffLimit. Defaults to the template's restartPolicy (Never when
	// unset), or OnFailure for the workers of an elastic job.
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`

	// retryableExitCodes are the exit codes that recreate a pod under
	// restartPolicy ExitCode, each 0-255. Defaults to 129-255 (killed by a
	// signal).
	// +listType=set
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=255
	// +optional
	RetryableExitCodes []int32 `json:"retryableExitCodes,omitempty"`

	// requests is paddle-operator's minimal number of replicas of an elastic
	// role. Prefer spec.elasticPolicy.minReplicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Requests *int32 `json:"requests,omitempty"`

	// limits is paddle-operator's maximal number of replicas of an elastic
	// role; setting it makes the job elastic. Prefer
	// spec.elasticPolicy.maxReplicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Limits *int32 `json:"limits,omitempty"`
}

// ElasticPolicy bounds an elastic job's workers and names the etcd of
// Paddle's elastic rendezvous.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="elasticPolicy.minReplicas must not exceed elasticPolicy.maxReplicas"
type ElasticPolicy struct {
	// minReplicas is the fewest workers the job runs with. Defaults to
	// worker.requests, else worker.replicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most workers the job may be scaled to. Defaults to
	// worker.limits, else worker.replicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// etcdEndpoints are the etcd servers of Paddle's elastic rendezvous, as
	// http://host:port (Paddle connects without TLS), e.g.
	// http://etcd.paddle:2379. Paddle dials the first one. Defaults to the
	// operator's --elastic-etcd-endpoints.
	// +optional
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`

	// timeoutSeconds is how long Paddle's launcher waits for more workers
	// (PADDLE_ELASTIC_TIMEOUT): with fewer than maxReplicas alive, training
	// (re)starts once membership has not changed for this long. Defaults to
	// 30, Paddle's own default.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// SchedulingPolicy configures gang scheduling of a job's pods.
type SchedulingPolicy struct {
	// minAvailable is the number of pods that must be schedulable together
	// before any is started. Defaults to all pods of the job.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// queue is the scheduler queue the job is submitted to.
	// +optional
	Queue string `json:"queue,omitempty"`

	// priorityClass is the PriorityClass of the job's pod group.
	// +optional
	PriorityClass string `json:"priorityClass,omitempty"`

	// minResources is the total of resources that must be free before the job
	// is scheduled. Defaults to the sum of the requests of all pods.
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`
}

// PaddleJob runs a PaddlePaddle distributed training job: parameter-server
// (ps + worker), heterogeneous parameter-server (ps + worker + heter),
// collective (worker) or single-node.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pdj,categories=all
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="PS",type=string,JSONPath=`.status.ps.ready`
// +kubebuilder:printcolumn:name="Worker",type=string,JSONPath=`.status.worker.ready`
// +kubebuilder:printcolumn:name="Heter",type=string,JSONPath=`.status.heter.ready`,priority=1
// +kubebuilder:printcolumn:name="Progress",type=integer,JSONPath=`.status.progress.percent`,description="percent of the training done, as the program reported it"
// +kubebuilder:printcolumn:name="Metric",type=string,JSONPath=`.status.progress.metrics[0].name`,priority=1,description="the first metric the program reported"
// +kubebuilder:printcolumn:name="Value",type=string,JSONPath=`.status.progress.metrics[0].value`,priority=1,description="the first metric's latest value"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 51",message="metadata.name must be at most 51 characters, so that pod names <name>-worker-<index> stay valid DNS labels (63 characters)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter): it also names the job's Service"
type PaddleJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the job.
	Spec PaddleJobSpec `json:"spec,omitempty"`
	// status is the observed state of the job, written by the operator.
	Status PaddleJobStatus `json:"status,omitempty"`
}

// PaddleJobList is a list of PaddleJobs.
//
// +kubebuilder:object:root=true
type PaddleJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PaddleJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PaddleJob{}, &PaddleJobList{})
}
