package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
)

// The reconcile pass: observe the job and its pods from the cache, decide,
// act, and write the status once (status.go). What a pass does for each
// feature lives in that feature's file (see doc.go).

// Options are the operator settings the reconciler needs.
type Options struct {
	// InitImage runs the wait-for-endpoints init container.
	InitImage string
	// MaxConcurrentReconciles is how many jobs are reconciled at once.
	MaxConcurrentReconciles int
	// PodCreateParallelism bounds the pod creates and deletes in flight across
	// all jobs.
	PodCreateParallelism int
	// HostPortMin and HostPortMax bound the ports of Host-intranet pods.
	HostPortMin, HostPortMax int32
	// RestartBackoff is the wait before recreating a failed pod, doubling
	// with every restart of the job up to MaxRestartBackoff.
	RestartBackoff, MaxRestartBackoff time.Duration
	// FailureSettleWindow is how long after a job's first new failure the
	// failures of its other pods are judged with it (failuresettle.go).
	FailureSettleWindow time.Duration
	// GangScheduler gang-schedules jobs with a schedulingPolicy whose
	// templates name no scheduler: volcano, scheduler-plugins or none.
	GangScheduler string
	// SchedulerPluginsName is the scheduler name of scheduler-plugins'
	// coscheduling; templates naming it are gang-scheduled with its PodGroups.
	SchedulerPluginsName string
	// ElasticEtcdEndpoints is the etcd of elastic jobs that name none.
	ElasticEtcdEndpoints []string
	// PodEventBatchPeriod is how long a pod's event waits before it brings
	// its job back: the events of a job's pods in that window (its pods
	// created, starting, finishing together) make one pass and at most one
	// status write, not one each.
	PodEventBatchPeriod time.Duration
	// Progress turns on the training programs' progress reports (progress.go).
	Progress ProgressOptions
	// IgnoreKueue turns the Kueue integration off (internal/operator/kueue):
	// the queue-name label is ignored, and the operator needs no access to
	// Kueue's objects. The reconciler knows Kueue only as its Queue.
	IgnoreKueue bool
}

// DefaultOptions are the settings used where Options leaves a zero value.
func DefaultOptions() Options {
	return Options{
		InitImage:               DefaultInitImage,
		MaxConcurrentReconciles: 16,
		PodCreateParallelism:    64,
		HostPortMin:             podcontract.DefaultHostPortMin,
		HostPortMax:             podcontract.DefaultHostPortMax,
		RestartBackoff:          DefaultRestartBackoff,
		MaxRestartBackoff:       DefaultMaxRestartBackoff,
		FailureSettleWindow:     DefaultFailureSettleWindow,
		GangScheduler:           GangVolcano,
		SchedulerPluginsName:    DefaultSchedulerPluginsName,
		PodEventBatchPeriod:     DefaultPodEventBatchPeriod,
	}
}

// PaddleJobReconciler reconciles PaddleJobs into pods, a headless Service and
// the endpoints ConfigMap. A pass observes the job and its children from the
// cache, decides with pure functions (pods.go, the pod contract, status.go and the
// feature files) and then acts, in bulk.
type PaddleJobReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Options  Options

	// SkipNameValidation lets tests start several managers in one process.
	SkipNameValidation bool

	hostPorts *hostPortAllocator
	slots     chan struct{}
	expect    *expectations
	// validator checks what the schema cannot, as the webhook does.
	validator *validation.Validator

	// Queue holds the jobs an admission queue (Kueue) has not admitted:
	// nil, every job runs as its spec.suspend says.
	Queue Queue

	// podGroupKinds are the gang schedulers whose PodGroup CRDs the cluster
	// serves, found when the controller is set up.
	podGroupKinds map[string]bool
}

// NewReconciler returns a reconciler with opts completed from DefaultOptions.
func NewReconciler(c client.Client, recorder events.EventRecorder, opts Options) *PaddleJobReconciler {
	def := DefaultOptions()
	if opts.InitImage == "" {
		opts.InitImage = def.InitImage
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = def.MaxConcurrentReconciles
	}
	if opts.PodCreateParallelism <= 0 {
		opts.PodCreateParallelism = def.PodCreateParallelism
	}
	if opts.HostPortMin <= 0 || opts.HostPortMax < opts.HostPortMin {
		opts.HostPortMin, opts.HostPortMax = def.HostPortMin, def.HostPortMax
	}
	if opts.RestartBackoff <= 0 {
		opts.RestartBackoff = def.RestartBackoff
	}
	if opts.MaxRestartBackoff < opts.RestartBackoff {
		opts.MaxRestartBackoff = max(def.MaxRestartBackoff, opts.RestartBackoff)
	}
	if opts.FailureSettleWindow <= 0 {
		opts.FailureSettleWindow = def.FailureSettleWindow
	}
	if opts.GangScheduler == "" {
		opts.GangScheduler = def.GangScheduler
	}
	if opts.SchedulerPluginsName == "" {
		opts.SchedulerPluginsName = def.SchedulerPluginsName
	}
	if opts.PodEventBatchPeriod <= 0 {
		opts.PodEventBatchPeriod = def.PodEventBatchPeriod
	}
	return &PaddleJobReconciler{
		Client:    c,
		Recorder:  recorder,
		Clock:     clock.RealClock{},
		Options:   opts,
		hostPorts: newHostPortAllocator(opts.HostPortMin, opts.HostPortMax),
		slots:     make(chan struct{}, opts.PodCreateParallelism),
		expect:    newExpectations(),
		validator: NewValidator(opts),
	}
}

// +kubebuilder:rbac:groups=batch.paddlepaddle.org,resources=paddlejobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=batch.paddlepaddle.org,resources=paddlejobs/status,verbs=get;update
// Children block their job's deletion (blockOwnerDeletion): under
// OwnerReferencesPermissionEnforcement that takes update on its finalizers.
// +kubebuilder:rbac:groups=batch.paddlepaddle.org,resources=paddlejobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch;create;update

// Reconcile brings one job's children and status in line with its spec.
func (r *PaddleJobReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	job := &paddlev1.PaddleJob{}
	if err := r.Get(ctx, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if job.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // the garbage collector removes the children
	}
	if !job.Spec.IsManagedByOperator() {
		return reconcile.Result{}, nil // spec.managedBy names another controller (MultiKueue)
	}
	// A job stored without the webhook (an API server that does not call
	// it, an earlier release) runs as the webhook would have stored it.
	job.Spec.SetDefaults()
	pods, err := r.jobPods(ctx, job)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	if !r.expect.satisfied(refOf(job), pods, now) {
		// The cache has not shown this operator's last creates or deletes: a
		// pass now would redo them and write a status from a stale view. Their
		// events bring the job back; the requeue covers what came and went.
		log.FromContext(ctx).V(2).Info("waiting for the cache to show the last pod changes")
		return reconcile.Result{RequeueAfter: expectationTimeout}, nil
	}
	if job.Status.IsFinished() {
		return r.reconcileFinished(ctx, job, pods, now)
	}
	queued, err := r.held(ctx, job) // why a Queue (Kueue) holds the job, if one does
	if err != nil {
		return reconcile.Result{}, err
	}
	if job.Spec.IsSuspended() || queued != "" {
		return r.reconcileSuspended(ctx, job, pods, now, queued)
	}
	return r.reconcileActive(ctx, job, pods, now)
}

// reconcileActive runs a job that is neither finished nor suspended: it
// applies the restart policies and the deadline, syncs the children and
// writes the status (unless it created pods: their pass writes it).
func (r *PaddleJobReconciler) reconcileActive(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, now time.Time) (reconcile.Result, error) {
	obs := observed{invalid: r.validateForRun(job), podUIDs: uidsOf(pods)}
	var requeue time.Duration
	var actErr error
	if obs.invalid == "" {
		active, _ := splitPods(job, pods)
		fails := evaluateFailures(job, active, now, r.Options.FailureSettleWindow)
		fails, untilStall := r.applyProgressDeadline(job, fails, now, active)
		pastDeadline, untilDeadline := deadlineFailure(job, now)
		switch {
		case pastDeadline != nil:
			obs.fatal = pastDeadline
			obs.pods = active
		case fails.fatal != nil:
			obs.fatal = fails.fatal
			obs.pods = active
		case fails.restarting() || len(recreating(job, pods)) > 0:
			return r.restart(ctx, job, pods, fails, now)
		default:
			var wait time.Duration
			job, obs, wait, actErr = r.run(ctx, job, pods, now)
			if apierrors.IsConflict(actErr) {
				return reconcile.Result{}, actErr // a write-ahead step met a newer job
			}
			requeue = earliest(earliest(untilDeadline, untilStall), wait)
			if fails.settling != nil {
				obs.settling = fails.settling.settling()
				requeue = earliest(requeue, fails.settling.wait)
			}
			if obs.created > 0 && actErr == nil {
				// The status is written by the pass the new pods' events
				// bring (batched), from what the cache shows then: written
				// now, it would be written again as soon as they start.
				return reconcile.Result{RequeueAfter: earliest(requeue, expectationTimeout)}, nil
			}
		}
	}

	status := nextStatus(job, obs, metav1.NewTime(now))
	requeue = earliest(requeue, r.copyProgress(job, &status))
	job, err := r.writeStatus(ctx, job, status, actErr)
	if err != nil {
		return reconcile.Result{}, errors.Join(actErr, err)
	}
	if job.Status.IsFinished() {
		// The pass the status's own event brings stops what the job still
		// runs (reconcileFinished), once the cache shows it finished: deleted
		// now, its pods could leave the cache before the status reaches it,
		// and a pass in between would see an unfinished job without pods.
		return reconcile.Result{}, actErr
	}
	return reconcile.Result{RequeueAfter: requeue}, actErr
}

// run syncs a running job's children with its spec: it deletes the pods
// scaled away, keeps the pod group current, creates the missing pods (once
// the gang scheduler admits the job and no restart backoff is pending), the
// Service and the endpoints. It returns the job (its status may have been
// written ahead: recordHostPorts), what the status is computed from, how
// long until the restart backoff ends, and the errors of its actions, each
// with the reason the status reports it under (failedAction).
func (r *PaddleJobReconciler) run(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, now time.Time) (*paddlev1.PaddleJob, observed, time.Duration, error) {
	active, excess := splitPods(job, pods)
	obs := observed{pods: active, podUIDs: uidsOf(pods), gang: GangSchedulerFor(&job.Spec, r.Options)}
	errs := []error{failedAction(paddlev1.ReasonPodDeletionFailed, r.deletePods(ctx, job, excess, "scaled down"))}

	admitted, waiting, err := r.ensurePodGroup(ctx, job)
	if err != nil {
		return job, obs, 0, errors.Join(append(errs, failedAction(paddlev1.ReasonPodGroupFailed, err))...)
	}
	obs.podGroupWaiting = waiting
	recorded, err := r.ensureHostPorts(ctx, job)
	if err != nil {
		return job, obs, 0, errors.Join(append(errs, failedAction(paddlev1.ReasonHostPortsFailed, err))...)
	}
	job = recorded
	if err := r.publishPlannedEndpoints(ctx, job); err != nil {
		return job, obs, 0, errors.Join(append(errs, failedAction(paddlev1.ReasonEndpointsFailed, err))...)
	}
	backoff := r.restartBackoffLeft(job, now)
	popts := podOptionsFor(job, r.Options)
	obs.specChanged = specChangedWhileRunning(job, popts.specHashes, active)
	obs.stopping = podNames(restartedPods(job, pods))
	if admitted && backoff == 0 && obs.specChanged == "" && len(obs.stopping) == 0 {
		created, err := r.createMissingPods(ctx, job, pods, active, popts)
		errs = append(errs, failedAction(podCreationReason(err), err))
		obs.pods = sortPods(append(active, created...))
		obs.created = len(created)
	} else if backoff > 0 && len(obs.pods) < job.Spec.TotalReplicas() {
		obs.backoff = backoff
	}
	// Pods resolve each other's names only once they run: the Service can
	// follow their creation.
	errs = append(errs, failedAction(paddlev1.ReasonServiceFailed, r.ensureService(ctx, job)))
	if errors.Join(errs...) == nil {
		missing, err := r.publishEndpoints(ctx, job, obs.pods)
		errs = append(errs, failedAction(paddlev1.ReasonEndpointsFailed, err))
		obs.missingHosts = missing
		obs.waitingForServers = waitingForServers(job, obs.pods)
	}
	return job, obs, backoff, errors.Join(errs...)
}

// earliest is the sooner of two requeue delays, 0 meaning none.
func earliest(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

func uidsOf(pods []*corev1.Pod) map[string]bool {
	out := make(map[string]bool, len(pods))
	for _, p := range pods {
		out[string(p.UID)] = true
	}
	return out
}

func refOf(job *paddlev1.PaddleJob) jobRef {
	return jobRef{key: types.NamespacedName{Namespace: job.Namespace, Name: job.Name}, uid: job.UID}
}

func (r *PaddleJobReconciler) forget(ctx context.Context, key types.NamespacedName) {
	r.expect.forget(key)
}
