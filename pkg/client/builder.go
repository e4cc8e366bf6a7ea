package client

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// JobBuilder builds a PaddleJob fluently:
//
//	job := client.NewJob("ctr", "default").
//		PS(2, client.Container("paddle", image)).
//		Workers(3, client.Container("paddle", image)).
//		Intranet(paddlev1.IntranetService).
//		Obj()
type JobBuilder struct{ job paddlev1.PaddleJob }

// NewJob starts a job with no roles.
func NewJob(name, namespace string) *JobBuilder {
	return &JobBuilder{paddlev1.PaddleJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: paddlev1.GroupVersion.String(), Kind: "PaddleJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Container is a pod template with one container.
func Container(name, image string, command ...string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: name, Image: image, Command: command}},
	}}
}

// PS sets n parameter servers from a pod template.
func (b *JobBuilder) PS(n int32, tmpl corev1.PodTemplateSpec) *JobBuilder {
	b.job.Spec.PS = &paddlev1.ReplicaSpec{Replicas: n, Template: tmpl}
	return b
}

// Workers sets n workers from a pod template.
func (b *JobBuilder) Workers(n int32, tmpl corev1.PodTemplateSpec) *JobBuilder {
	b.job.Spec.Worker = &paddlev1.ReplicaSpec{Replicas: n, Template: tmpl}
	return b
}

// Heter sets n heterogeneous trainers from a pod template.
func (b *JobBuilder) Heter(n int32, tmpl corev1.PodTemplateSpec) *JobBuilder {
	b.job.Spec.Heter = &paddlev1.ReplicaSpec{Replicas: n, Template: tmpl}
	return b
}

// Intranet sets how pods address each other.
func (b *JobBuilder) Intranet(i paddlev1.Intranet) *JobBuilder {
	b.job.Spec.Intranet = i
	return b
}

// CleanPodPolicy sets which pods a finished job deletes.
func (b *JobBuilder) CleanPodPolicy(p paddlev1.CleanPodPolicy) *JobBuilder {
	b.job.Spec.CleanPodPolicy = p
	return b
}

// WithGloo sets the Gloo level (0, 1 or 2).
func (b *JobBuilder) WithGloo(level int32) *JobBuilder {
	b.job.Spec.WithGloo = ptr.To(level)
	return b
}

// RestartPolicy sets the restart policy of every role the job has so far.
func (b *JobBuilder) RestartPolicy(p paddlev1.RestartPolicy) *JobBuilder {
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := b.job.Spec.Replicas(rt); rs != nil {
			rs.RestartPolicy = p
		}
	}
	return b
}

// ProgressDeadlineSeconds sets how long the running job may go without a
// progress report before it is restarted (or failed).
func (b *JobBuilder) ProgressDeadlineSeconds(seconds int64) *JobBuilder {
	b.job.Spec.ProgressDeadlineSeconds = ptr.To(seconds)
	return b
}

// Labels adds labels to the job.
func (b *JobBuilder) Labels(labels map[string]string) *JobBuilder {
	if b.job.Labels == nil {
		b.job.Labels = map[string]string{}
	}
	for k, v := range labels {
		b.job.Labels[k] = v
	}
	return b
}

// Obj returns a copy of the job built so far.
func (b *JobBuilder) Obj() *paddlev1.PaddleJob { return b.job.DeepCopy() }
