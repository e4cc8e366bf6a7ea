package kueue

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
)

// Discover reports whether the cluster serves Kueue's Workloads; a Kueue
// installed later is picked up when the operator restarts.
func Discover(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	return kube.ServesKind(dc, WorkloadGVK)
}

// CacheWorkloads adds the jobs' Workloads to the manager's cache options:
// those carrying the job-name label (the operator sets it on the Workloads
// it creates; MultiKueue's copies keep the manager's labels).
func CacheWorkloads(opts *cache.Options, owned cache.ByObject) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	opts.ByObject[newUnstructured(WorkloadGVK)] = owned
}

// SetupWithManager registers the Kueue controller: it follows the jobs,
// their Workloads and their pods (for PodsReady, and to give the quota back
// once an evicted job's pods are gone).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paddlev1.PaddleJob{}).
		Owns(newUnstructured(WorkloadGVK)).
		// A prebuilt Workload names its job only by the job's label until
		// adopted: MultiKueue creates it before the job.
		Watches(newUnstructured(WorkloadGVK), handler.EnqueueRequestsFromMapFunc(prebuiltFor)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &paddlev1.PaddleJob{}, handler.OnlyControllerOwner())).
		WithOptions(opts).
		Named("paddlejob-kueue").
		Complete(r)
}

// prebuiltFor maps a Workload no job controls yet to the job its job-name
// label names.
func prebuiltFor(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[paddlev1.LabelJobName]
	if name == "" || metav1.GetControllerOf(o) != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}
