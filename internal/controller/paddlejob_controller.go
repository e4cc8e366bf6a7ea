package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

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
}

// DefaultOptions are the settings used where Options leaves a zero value.
func DefaultOptions() Options {
	return Options{
		InitImage:               DefaultInitImage,
		MaxConcurrentReconciles: 16,
		PodCreateParallelism:    64,
		HostPortMin:             DefaultHostPortMin,
		HostPortMax:             DefaultHostPortMax,
	}
}

// PaddleJobReconciler reconciles PaddleJobs into pods, a headless Service and
// the endpoints ConfigMap. A pass observes the job and its children from the
// cache, decides with pure functions (pods.go, env.go, status.go,
// policies.go) and then acts, in bulk.
type PaddleJobReconciler struct {
	ctrl.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Options  Options

	// SkipNameValidation lets tests start several managers in one process.
	SkipNameValidation bool

	hostPorts *hostPortAllocator
	slots     chan struct{}
	expect    *expectations

	// finished remembers the jobs this operator saw finish, by name and UID.
	// A status write reaches the job cache after the pod deletions it causes
	// may reach the pod cache; without this a pass could see a job that looks
	// unfinished with its pods gone, and recreate them.
	finishedMu sync.Mutex
	finished   map[types.NamespacedName]types.UID
}

// NewReconciler returns a reconciler with opts completed from DefaultOptions.
func NewReconciler(c ctrl.Client, recorder events.EventRecorder, opts Options) *PaddleJobReconciler {
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
	return &PaddleJobReconciler{
		Client:    c,
		Recorder:  recorder,
		Clock:     clock.RealClock{},
		Options:   opts,
		hostPorts: newHostPortAllocator(opts.HostPortMin, opts.HostPortMax),
		slots:     make(chan struct{}, opts.PodCreateParallelism),
		expect:    newExpectations(),
		finished:  map[types.NamespacedName]types.UID{},
	}
}

// +kubebuilder:rbac:groups=batch.paddlepaddle.org,resources=paddlejobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch.paddlepaddle.org,resources=paddlejobs/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one job's children and status in line with its spec.
func (r *PaddleJobReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	job := &paddlev1.PaddleJob{}
	if err := r.Get(ctx, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if job.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // the garbage collector removes the children
	}
	logger := log.FromContext(ctx)

	pods, err := r.jobPods(ctx, job)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !r.expect.satisfied(refOf(job), pods, r.Clock.Now()) {
		// The cache has not shown this operator's last creates or deletes: a
		// pass now would redo them and write a status from a stale view. Their
		// events bring the job back; the requeue covers what came and went.
		logger.V(2).Info("waiting for the cache to show the last pod changes")
		return reconcile.Result{RequeueAfter: expectationTimeout}, nil
	}
	if job.Status.IsFinished() || r.sawFinish(job) {
		return reconcile.Result{}, r.cleanUp(ctx, job, pods)
	}

	obs := observed{invalid: validateForRun(job)}
	var actErr error
	if obs.invalid == "" {
		obs, actErr = r.run(ctx, job, pods)
	}

	status := nextStatus(job, obs, metav1.NewTime(r.Clock.Now()))
	if actErr != nil && !status.IsFinished() {
		setCondition(&status, metav1.NewTime(r.Clock.Now()), paddlev1.JobCreated, metav1.ConditionFalse, ReasonCreatingPods, actErr.Error())
	}
	if statusChanged(&job.Status, &status) {
		updated := job.DeepCopy()
		updated.Status = status
		if err := r.Status().Update(ctx, updated); err != nil {
			if apierrors.IsConflict(err) {
				// The cache is behind; the newer job's event brings us back.
				logger.V(1).Info("status update conflict; waiting for the newer job")
				return reconcile.Result{}, actErr
			}
			return reconcile.Result{}, errors.Join(actErr, fmt.Errorf("updating status of PaddleJob %s: %w", req.NamespacedName, err))
		}
		r.recordTransition(job, updated)
		job = updated
	}
	if job.Status.IsFinished() {
		r.markFinished(job)
		return reconcile.Result{}, errors.Join(actErr, r.cleanUp(ctx, job, pods))
	}
	return reconcile.Result{}, actErr
}

// run creates and deletes what differs from the spec, publishes endpoints,
// and returns what the status is computed from.
func (r *PaddleJobReconciler) run(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod) (observed, error) {
	active, excess := splitPods(job, pods)
	deleteErr := r.deletePods(ctx, job, excess, "scaled down")

	jobValues := plannedJobValues(job)
	if jobValues != nil {
		if err := r.ensureEndpointsConfigMap(ctx, job, endpointsData(jobValues)); err != nil {
			return observed{pods: active}, err
		}
	}
	created, createErr := r.createMissingPods(ctx, job, pods, active, jobValues)
	active = sortPods(append(active, created...))
	// Pods resolve each other's names only once they run: the Service can
	// follow their creation.
	if err := r.ensureService(ctx, job); err != nil {
		createErr = errors.Join(createErr, err)
	}

	obs := observed{pods: active}
	if waitsForEndpoints(&job.Spec) && createErr == nil {
		missing, err := r.publishEndpoints(ctx, job, active)
		if err != nil {
			return obs, errors.Join(deleteErr, err)
		}
		obs.missingHosts = missing
	}
	return obs, errors.Join(deleteErr, createErr)
}

// validateForRun checks what the schema cannot: names the operator reserves.
func validateForRun(job *paddlev1.PaddleJob) string {
	for _, rt := range paddlev1.ReplicaTypes {
		rs := job.Spec.Replicas(rt)
		if rs == nil {
			continue
		}
		for _, c := range append(append([]corev1.Container(nil), rs.Template.Spec.InitContainers...), rs.Template.Spec.Containers...) {
			if c.Name == waitContainerName {
				return fmt.Sprintf("spec.%s.template: container name %q is reserved for the operator's init container; rename the container", rt, waitContainerName)
			}
		}
		for _, v := range rs.Template.Spec.Volumes {
			if v.Name == endpointsVolume {
				return fmt.Sprintf("spec.%s.template: volume name %q is reserved for the job's endpoints; rename the volume", rt, endpointsVolume)
			}
		}
	}
	return ""
}

// jobPods lists the pods the job controls, from the cache.
func (r *PaddleJobReconciler) jobPods(ctx context.Context, job *paddlev1.PaddleJob) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, ctrl.InNamespace(job.Namespace), ctrl.MatchingFields{podOwnerKey: job.Name}); err != nil {
		return nil, fmt.Errorf("listing pods of PaddleJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == job.UID {
			out = append(out, &list.Items[i])
		}
	}
	return sortPods(out), nil
}

// splitPods separates the pods the spec wants (index < replicas, not being
// deleted) from the pods beyond the replica counts.
func splitPods(job *paddlev1.PaddleJob, pods []*corev1.Pod) (active, excess []*corev1.Pod) {
	for _, p := range pods {
		rt, i, ok := podIndex(p)
		switch {
		case p.DeletionTimestamp != nil:
		case !ok || i >= job.Spec.ReplicaCount(rt):
			excess = append(excess, p)
		default:
			active = append(active, p)
		}
	}
	return active, excess
}

// sortPods orders pods by role (ps, worker, heter) then index: every list the
// operator derives from pods is deterministic.
func sortPods(pods []*corev1.Pod) []*corev1.Pod {
	rank := map[paddlev1.ReplicaType]int{}
	for i, rt := range paddlev1.ReplicaTypes {
		rank[rt] = i
	}
	sort.SliceStable(pods, func(a, b int) bool {
		ra, ia, _ := podIndex(pods[a])
		rb, ib, _ := podIndex(pods[b])
		if ra != rb {
			return rank[ra] < rank[rb]
		}
		if ia != ib {
			return ia < ib
		}
		return pods[a].Name < pods[b].Name
	})
	return pods
}

func (r *PaddleJobReconciler) ensureService(ctx context.Context, job *paddlev1.PaddleJob) error {
	var svc corev1.Service
	err := r.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: job.Name}, &svc)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	if err := r.Create(ctx, newService(job)); err != nil && !apierrors.IsAlreadyExists(err) {
		r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "FailedCreateService", "Create", "creating Service %s: %v", job.Name, err)
		return fmt.Errorf("creating Service %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// ensureEndpointsConfigMap creates or updates the job's endpoints ConfigMap.
func (r *PaddleJobReconciler) ensureEndpointsConfigMap(ctx context.Context, job *paddlev1.PaddleJob, data map[string]string) error {
	var cm corev1.ConfigMap
	key := types.NamespacedName{Namespace: job.Namespace, Name: endpointsConfigMapName(job.Name)}
	err := r.Get(ctx, key, &cm)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, newEndpointsConfigMap(job, data)); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", key, err)
		}
		return nil
	case err != nil:
		return err
	case cm.Data[versionKey] == data[versionKey]:
		return nil
	}
	cm.Data = data
	if err := r.Update(ctx, &cm); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", key, err)
	}
	return nil
}

// publishEndpoints, in PodIP and Host intranet, publishes the job variables
// once every pod has an address and releases the pods waiting for them. It
// returns the pods whose address is still unknown.
func (r *PaddleJobReconciler) publishEndpoints(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod) ([]string, error) {
	topo := observedTopology(job, pods)
	if missing := topo.missingHosts(job.Name); len(missing) > 0 {
		return missing, nil
	}
	data := endpointsData(jobEnv(&job.Spec, topo))
	if err := r.ensureEndpointsConfigMap(ctx, job, data); err != nil {
		return nil, err
	}
	version := data[versionKey]
	var waiting []*corev1.Pod
	for _, p := range pods {
		// Pods past their init containers keep the lists they started with.
		if p.Status.Phase == corev1.PodPending && p.Annotations[paddlev1.AnnotationEndpoints] != version {
			waiting = append(waiting, p)
		}
	}
	return nil, r.forEach(ctx, waiting, func(p *corev1.Pod) error {
		patch := ctrl.MergeFrom(p.DeepCopy())
		p = p.DeepCopy()
		p.Annotations[paddlev1.AnnotationEndpoints] = version
		if err := r.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing pod %s: %w", p.Name, err)
		}
		return nil
	})
}

// cleanUp stops what a finished job still runs and applies cleanPodPolicy.
func (r *PaddleJobReconciler) cleanUp(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod) error {
	return r.deletePods(ctx, job, podsToDeleteWhenFinished(job, pods), "job "+string(job.Status.Phase))
}

// recordTransition emits an event when a job reaches a terminal phase.
func (r *PaddleJobReconciler) recordTransition(old, updated *paddlev1.PaddleJob) {
	if old.Status.Phase == updated.Status.Phase {
		return
	}
	switch updated.Status.Phase {
	case paddlev1.PaddleJobCompleted:
		c := findCondition(updated, paddlev1.JobSucceeded)
		r.Recorder.Eventf(updated, nil, corev1.EventTypeNormal, "JobCompleted", "Complete", "%s", c.Message)
	case paddlev1.PaddleJobFailed:
		c := findCondition(updated, paddlev1.JobFailed)
		r.Recorder.Eventf(updated, nil, corev1.EventTypeWarning, "JobFailed", "Fail", "%s: %s", c.Reason, c.Message)
	}
}

func findCondition(job *paddlev1.PaddleJob, t string) metav1.Condition {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}

func (r *PaddleJobReconciler) markFinished(job *paddlev1.PaddleJob) {
	r.finishedMu.Lock()
	defer r.finishedMu.Unlock()
	r.finished[types.NamespacedName{Namespace: job.Namespace, Name: job.Name}] = job.UID
}

func (r *PaddleJobReconciler) sawFinish(job *paddlev1.PaddleJob) bool {
	r.finishedMu.Lock()
	defer r.finishedMu.Unlock()
	return r.finished[types.NamespacedName{Namespace: job.Namespace, Name: job.Name}] == job.UID
}

func (r *PaddleJobReconciler) forget(key types.NamespacedName) {
	r.expect.forget(key)
	r.finishedMu.Lock()
	defer r.finishedMu.Unlock()
	delete(r.finished, key)
}

func refOf(job *paddlev1.PaddleJob) jobRef {
	return jobRef{key: types.NamespacedName{Namespace: job.Namespace, Name: job.Name}, uid: job.UID}
}
