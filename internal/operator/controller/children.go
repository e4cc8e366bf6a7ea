package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Syncing a running job's children — pods, the headless Service and the
// endpoints ConfigMap — with its spec.

// run syncs a running job's children with its spec: it deletes the pods
// scaled away, keeps the pod group current, creates
// the missing pods (once the gang scheduler admits the job and no restart
// backoff is pending), the Service and the endpoints. It returns the job (its
// status may have been written), what the status is computed from, and how
// long until the restart backoff ends.
func (r *PaddleJobReconciler) run(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, now time.Time) (*paddlev1.PaddleJob, observed, time.Duration, error) {
	active, excess := splitPods(job, pods)
	obs := observed{pods: active, podUIDs: uidsOf(pods), gang: GangSchedulerFor(&job.Spec, r.Options)}
	errs := []error{r.deletePods(ctx, job, excess, "scaled down")}

	admitted, waiting, err := r.ensurePodGroup(ctx, job)
	if err != nil {
		return job, obs, 0, errors.Join(append(errs, err)...)
	}
	obs.podGroupWaiting = waiting
	if job, err = r.ensureHostPorts(ctx, job); err != nil {
		return job, obs, 0, errors.Join(append(errs, err)...)
	}
	// Pods read the job variables from the ConfigMap: where they are known
	// up front it exists before the pods.
	if jobValues := plannedJobValues(job); jobValues != nil {
		if err := r.ensureEndpointsConfigMap(ctx, job, endpointsData(jobValues)); err != nil {
			return job, obs, 0, errors.Join(append(errs, err)...)
		}
	}
	backoff := r.restartBackoffLeft(job, now)
	if admitted && backoff == 0 {
		created, err := r.createMissingPods(ctx, job, pods, active)
		errs = append(errs, err)
		obs.pods = sortPods(append(active, created...))
		obs.created = len(created)
	} else if backoff > 0 && len(obs.pods) < job.Spec.TotalReplicas() {
		obs.backoff = backoff
	}
	// Pods resolve each other's names only once they run: the Service can
	// follow their creation.
	errs = append(errs, r.ensureService(ctx, job))
	if waitsForEndpoints(&job.Spec) && errors.Join(errs...) == nil {
		missing, err := r.publishEndpoints(ctx, job, obs.pods)
		errs = append(errs, err)
		obs.missingHosts = missing
	}
	return job, obs, backoff, errors.Join(errs...)
}

// validateForRun checks what the schema cannot (paddlev1.ValidateSpec and
// ValidateEndpoints): the admission webhook rejects it already where it is
// installed.
func validateForRun(job *paddlev1.PaddleJob) string {
	if errs := append(paddlev1.ValidateSpec(&job.Spec), ValidateEndpoints(&job.Spec, job.Name)...); len(errs) > 0 {
		return errs.ToAggregate().Error()
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
