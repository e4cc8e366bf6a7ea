package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
