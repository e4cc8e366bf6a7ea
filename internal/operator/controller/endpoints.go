package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// The job variables (endpoint lists and counts) are published in one
// ConfigMap per job, <job>-endpoints, keyed by variable name, plus a version
// that identifies the lists. Pods read them with configMapKeyRef. In PodIP and
// Host intranet a pod's training containers start only after the operator has
// set the pod's AnnotationEndpoints to the version that includes it, which it
// does once every pod has an IP: no process ever starts with a partial list.

func newEndpointsConfigMap(job *paddlev1.PaddleJob, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            podcontract.EndpointsConfigMapName(job.Name),
			Namespace:       job.Namespace,
			Labels:          map[string]string{paddlev1.LabelJobName: job.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))},
		},
		Data: data,
	}
}

// ensureEndpointsConfigMap creates or updates the job's endpoints ConfigMap.
func (r *PaddleJobReconciler) ensureEndpointsConfigMap(ctx context.Context, job *paddlev1.PaddleJob, data map[string]string) error {
	var cm corev1.ConfigMap
	key := types.NamespacedName{Namespace: job.Namespace, Name: podcontract.EndpointsConfigMapName(job.Name)}
	err := r.Get(ctx, key, &cm)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, newEndpointsConfigMap(job, data)); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", key, err)
		}
		return nil
	case err != nil:
		return err
	case !metav1.IsControlledBy(&cm, job):
		// Another's ConfigMap of that name: never overwrite it.
		return fmt.Errorf("ConfigMap %s exists and is not PaddleJob %s's (no controller reference to it): rename the job or that ConfigMap", key, job.Name)
	case cm.Data[podcontract.VersionKey] == data[podcontract.VersionKey]:
		return nil
	}
	cm.Data = data
	if err := r.Update(ctx, &cm); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", key, err)
	}
	return nil
}
