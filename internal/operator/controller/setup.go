package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// podOwnerKey indexes pods by the name of the PaddleJob that controls them.
const podOwnerKey = ".metadata.controller.paddlejob"

// DefaultPodEventBatchPeriod batches pod events as the Kubernetes Job
// controller does, shorter: a status lags its pods by at most this.
const DefaultPodEventBatchPeriod = 200 * time.Millisecond

// DiscoverPodGroupKinds finds the gang schedulers whose PodGroup kinds the
// cluster serves. Jobs asking for another one wait, saying so; a scheduler
// installed later is picked up when the operator restarts.
func DiscoverPodGroupKinds(cfg *rest.Config) (map[string]bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	served := map[string]bool{}
	for gang, gvk := range PodGroupGVKs {
		ok, err := kube.ServesKind(dc, gvk)
		if err != nil {
			return nil, err
		}
		if ok {
			served[gang] = true
		}
	}
	return served, nil
}

// CacheOptions restricts the manager's caches of pods, Services, ConfigMaps
// and PodGroups to the objects the operator creates (they carry
// LabelJobName), so memory follows the number of PaddleJob pods, not the
// cluster's size, and keeps only what the operator reads of them
// (stripPodForCache, stripServiceForCache, stripConfigMapForCache).
func CacheOptions(podGroupKinds map[string]bool) cache.Options {
	owned := OwnedObjects()
	pods, services, configMaps := owned, owned, owned
	pods.Transform = stripPodForCache
	services.Transform = stripServiceForCache
	configMaps.Transform = stripConfigMapForCache
	byObject := map[client.Object]cache.ByObject{
		&corev1.Pod{}:       pods,
		&corev1.Service{}:   services,
		&corev1.ConfigMap{}: configMaps,
	}
	// Every PodGroup is cached: the user may ship the job's own (paddle-operator's
	// Volcano example does), without the operator's label.
	for gang := range podGroupKinds {
		byObject[podGroupObject(PodGroupGVKs[gang])] = cache.ByObject{}
	}
	// No cached object keeps its managedFields: the operator never reads
	// them, and on a pod they are a fifth of its size. (An update without
	// managedFields leaves the stored ones as they are.)
	return cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
}

// stripPodForCache drops from a cached pod what no reader of observed pods
// uses. Every pod loses its containers' environment values (a
// configMapKeyRef each, a third of a PaddleJob's pod), commands and
// arguments. A pod none of whose containers has failed keeps of its
// containers only their names, images and restart policies (which init
// containers are sidecars), and no volumes: the rest is read only by the
// failure explanations (internal/paddlefailure: a job's mode by a
// variable's name, the mounts and volumes of a write that failed, the
// resources of an OOM kill), and only for a pod with a failed container —
// the watch event that brings a container's failure brings the whole pod
// again. The operator writes observed pods only with merge patches of their
// annotations, so nothing dropped is ever written back.
var stripPodForCache = cacheTransform(func(pod *corev1.Pod) {
	failed := hasFailedContainer(pod)
	if !failed {
		pod.Spec.Volumes = nil
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !failed {
				cs[i] = corev1.Container{Name: cs[i].Name, Image: cs[i].Image, RestartPolicy: cs[i].RestartPolicy}
				continue
			}
			c := &cs[i]
			c.EnvFrom, c.Command, c.Args = nil, nil, nil
			for j := range c.Env {
				c.Env[j].Value, c.Env[j].ValueFrom = "", nil
			}
		}
	}
})

// stripServiceForCache keeps a job's Service's metadata: the operator only
// needs to know that it exists (ensureService) and never updates it.
var stripServiceForCache = cacheTransform(func(svc *corev1.Service) {
	svc.Spec, svc.Status = corev1.ServiceSpec{}, corev1.ServiceStatus{}
})

// stripConfigMapForCache keeps of a job's endpoints ConfigMap the version of
// its lists, all ensureEndpointsConfigMap compares; an update replaces the
// whole data. The lists grow with the job's size, the version does not.
var stripConfigMapForCache = cacheTransform(func(cm *corev1.ConfigMap) {
	version, ok := cm.Data[podcontract.VersionKey]
	cm.Data, cm.BinaryData = nil, nil
	if ok {
		cm.Data = map[string]string{podcontract.VersionKey: version}
	}
})

// cacheTransform is a cache transform that drops an object's managedFields,
// as the default transform does (an object's own transform replaces it),
// then strips what else the operator never reads of a T.
func cacheTransform[T client.Object](strip func(T)) func(any) (any, error) {
	withoutManagedFields := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		obj, err := withoutManagedFields(obj)
		if o, ok := obj.(T); ok && err == nil {
			strip(o)
		}
		return obj, err
	}
}

// hasFailedContainer reports whether a container of the pod, init
// containers included, exited with a non-zero code, now or before its last
// restart: the containers describeFailure explains.
func hasFailedContainer(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t != nil && t.ExitCode != 0 {
					return true
				}
			}
		}
	}
	return false
}

// OwnedObjects selects the objects made for a job: they carry LabelJobName.
func OwnedObjects() cache.ByObject {
	req, err := labels.NewRequirement(paddlev1.LabelJobName, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant selector
	}
	return cache.ByObject{Label: labels.NewSelector().Add(*req)}
}

func podGroupObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(gvk)
	return pg
}

// controllingJob is the name of the PaddleJob controlling o, if one does.
func controllingJob(o metav1.Object) (string, bool) {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.APIVersion != paddlev1.GroupVersion.String() || ref.Kind != "PaddleJob" {
		return "", false
	}
	return ref.Name, true
}

// podOwnerIndex is the podOwnerKey index: the PaddleJob controlling a pod.
func podOwnerIndex(o client.Object) []string {
	if job, ok := controllingJob(o); ok {
		return []string{job}
	}
	return nil
}

// batchedByController enqueues the PaddleJob controlling an object, after
// period: the events of one job's pods within it coalesce into one pass (the
// queue keeps a waiting item once). Nothing in a pod event needs a faster
// answer: the pass that creates or deletes pods already accounts for them.
func batchedByController(period time.Duration) handler.TypedEventHandler[client.Object, reconcile.Request] {
	enqueue := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if job, ok := controllingJob(o); ok {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: job}}, period)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
	}
}

// SetupWithManager registers the owner index and the controller, watching
// the PodGroups of the gang schedulers in podGroupKinds (see
// DiscoverPodGroupKinds; the manager's cache must know them too) and what
// the Queue's holds depend on.
func (r *PaddleJobReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, podGroupKinds map[string]bool) error {
	r.podGroupKinds = podGroupKinds
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podOwnerKey, podOwnerIndex); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&paddlev1.PaddleJob{}).
		Watches(&corev1.Pod{}, batchedByController(r.Options.PodEventBatchPeriod)).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{})
	// A job's PodGroup has the job's name, whoever created it.
	sameName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}}
	})
	for gang := range r.podGroupKinds {
		b = b.Watches(podGroupObject(PodGroupGVKs[gang]), sameName)
	}
	if r.Queue != nil {
		for _, o := range r.Queue.Watched() {
			b = b.Owns(o)
		}
	}
	b = r.watchProgress(b)
	return b.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles, SkipNameValidation: &r.SkipNameValidation,
			RateLimiter: newRateLimiter()}).
		Named("paddlejob").
		Complete(r)
}

// MaxRetryDelay caps the wait before a failed pass is retried. The default
// limiter doubles it up to 1000 s: after an API server outage a job would
// wait a quarter of an hour for its retry.
const MaxRetryDelay = 60 * time.Second

// newRateLimiter is controller-runtime's default limiter (per-job
// exponential backoff from 5 ms, an overall 10 qps bucket) with its delays
// capped at MaxRetryDelay.
func newRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return cappedRateLimiter{TypedRateLimiter: workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](), max: MaxRetryDelay}
}

type cappedRateLimiter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	max time.Duration
}

func (l cappedRateLimiter) When(item reconcile.Request) time.Duration {
	return min(l.TypedRateLimiter.When(item), l.max)
}
