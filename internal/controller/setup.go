package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// podOwnerKey indexes pods by the name of the PaddleJob that controls them.
const podOwnerKey = ".metadata.controller.paddlejob"

// CacheOptions restricts the manager's caches of pods, Services and
// ConfigMaps to the objects the operator creates (they carry LabelJobName),
// so memory follows the number of PaddleJob pods, not the cluster's size.
func CacheOptions() cache.Options {
	req, err := labels.NewRequirement(paddlev1.LabelJobName, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant selector
	}
	owned := cache.ByObject{Label: labels.NewSelector().Add(*req)}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:       owned,
		&corev1.Service{}:   owned,
		&corev1.ConfigMap{}: owned,
	}}
}

// SetupWithManager registers the owner index and the controller.
func (r *PaddleJobReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podOwnerKey, func(o client.Object) []string {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.APIVersion != paddlev1.GroupVersion.String() || ref.Kind != "PaddleJob" {
			return nil
		}
		return []string{ref.Name}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&paddlev1.PaddleJob{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles, SkipNameValidation: &r.SkipNameValidation}).
		Named("paddlejob").
		Complete(r)
}
