package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// newService is the job's headless Service. With each pod's hostname and
// subdomain it gives every pod the DNS name <pod>.<job>, published before the
// pods are ready so peers can resolve each other while starting.
func newService(job *paddlev1.PaddleJob) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            job.Name,
			Namespace:       job.Namespace,
			Labels:          map[string]string{paddlev1.LabelJobName: job.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{paddlev1.LabelJobName: job.Name},
			PublishNotReadyAddresses: true,
		},
	}
}

func (r *PaddleJobReconciler) ensureService(ctx context.Context, job *paddlev1.PaddleJob) error {
	var svc corev1.Service
	err := r.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: job.Name}, &svc)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	if err := r.Create(ctx, newService(job)); err != nil && !apierrors.IsAlreadyExists(err) {
		r.eventf(job, corev1.EventTypeWarning, "FailedCreateService", "Create", "creating Service %s: %v", job.Name, err)
		return fmt.Errorf("creating Service %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}
