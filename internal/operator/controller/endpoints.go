package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The job variables (endpoint lists and counts) are published in one
// ConfigMap per job, <job>-endpoints, keyed by variable name, plus a version
// that identifies the lists. Pods read them with configMapKeyRef. In PodIP and
// Host intranet a pod's training containers start only after the operator has
// set the pod's AnnotationEndpoints to the version that includes it, which it
// does once every pod has an IP: no process ever starts with a partial list.

func endpointsConfigMapName(job string) string { return job + "-endpoints" }

// endpointsData is the ConfigMap data for a job's variables, with its version.
func endpointsData(values map[string]string) map[string]string {
	data := make(map[string]string, len(values)+1)
	keys := make([]string, 0, len(values))
	for k, v := range values {
		data[k] = v
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(values[k]))
		h.Write([]byte{0})
	}
	data[versionKey] = hex.EncodeToString(h.Sum(nil))[:16]
	return data
}

func newEndpointsConfigMap(job *paddlev1.PaddleJob, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            endpointsConfigMapName(job.Name),
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
	case !metav1.IsControlledBy(&cm, job):
		// Another's ConfigMap of that name: never overwrite it.
		return fmt.Errorf("ConfigMap %s exists and is not PaddleJob %s's (no controller reference to it): rename the job or that ConfigMap", key, job.Name)
	case cm.Data[versionKey] == data[versionKey]:
		return nil
	}
	cm.Data = data
	if err := r.Update(ctx, &cm); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", key, err)
	}
	return nil
}
