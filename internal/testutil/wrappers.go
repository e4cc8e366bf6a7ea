package testutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// DefaultImage is the image of the containers the wrappers create.
const DefaultImage = "registry.example.com/paddle/trainer:test"

// JobWrapper wraps a PaddleJob under construction.
type JobWrapper struct{ paddlev1.PaddleJob }

// MakePaddleJob starts a job with no roles.
func MakePaddleJob(name, namespace string) *JobWrapper {
	return &JobWrapper{paddlev1.PaddleJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: paddlev1.GroupVersion.String(), Kind: "PaddleJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Obj returns the job.
func (w *JobWrapper) Obj() *paddlev1.PaddleJob { return &w.PaddleJob }

// PS sets n parameter servers with a default container.
func (w *JobWrapper) PS(n int32) *JobWrapper {
	w.Spec.PS = replicaSpec(n)
	return w
}

// Workers sets n workers with a default container.
func (w *JobWrapper) Workers(n int32) *JobWrapper {
	w.Spec.Worker = replicaSpec(n)
	return w
}

// Heter sets n heterogeneous trainers with a default container.
func (w *JobWrapper) Heter(n int32) *JobWrapper {
	w.Spec.Heter = replicaSpec(n)
	return w
}

// Intranet sets spec.intranet.
func (w *JobWrapper) Intranet(i paddlev1.Intranet) *JobWrapper {
	w.Spec.Intranet = i
	return w
}

// Elastic makes the workers elastic between min and max, rendezvousing in
// the etcd at endpoints (none: the operator's).
func (w *JobWrapper) Elastic(minReplicas, maxReplicas int32, endpoints ...string) *JobWrapper {
	w.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: &minReplicas, MaxReplicas: &maxReplicas, EtcdEndpoints: endpoints}
	return w
}

// WithGloo sets spec.withGloo.
func (w *JobWrapper) WithGloo(level int32) *JobWrapper {
	w.Spec.WithGloo = ptr.To(level)
	return w
}

// CleanPodPolicy sets spec.cleanPodPolicy.
func (w *JobWrapper) CleanPodPolicy(p paddlev1.CleanPodPolicy) *JobWrapper {
	w.Spec.CleanPodPolicy = p
	return w
}

// Image sets the image of every container of every role.
func (w *JobWrapper) Image(image string) *JobWrapper {
	return w.eachContainer(func(_ paddlev1.ReplicaType, c *corev1.Container) { c.Image = image })
}

// Command sets the command of every container of a role.
func (w *JobWrapper) Command(rt paddlev1.ReplicaType, command ...string) *JobWrapper {
	return w.eachContainer(func(r paddlev1.ReplicaType, c *corev1.Container) {
		if r == rt {
			c.Command = command
		}
	})
}

// Env adds a variable to every container of a role.
func (w *JobWrapper) Env(rt paddlev1.ReplicaType, name, value string) *JobWrapper {
	return w.eachContainer(func(r paddlev1.ReplicaType, c *corev1.Container) {
		if r == rt {
			c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
		}
	})
}

// GPUs sets an nvidia.com/gpu limit on the first container of a role.
func (w *JobWrapper) GPUs(rt paddlev1.ReplicaType, n int64) *JobWrapper {
	rs := w.Spec.Replicas(rt)
	c := &rs.Template.Spec.Containers[0]
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits["nvidia.com/gpu"] = *resource.NewQuantity(n, resource.DecimalSI)
	return w
}

// RestartPolicy sets the pod restart policy of a role's template.
func (w *JobWrapper) RestartPolicy(rt paddlev1.ReplicaType, p corev1.RestartPolicy) *JobWrapper {
	w.Spec.Replicas(rt).Template.Spec.RestartPolicy = p
	return w
}

func (w *JobWrapper) eachContainer(fn func(paddlev1.ReplicaType, *corev1.Container)) *JobWrapper {
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := w.Spec.Replicas(rt); rs != nil {
			for i := range rs.Template.Spec.Containers {
				fn(rt, &rs.Template.Spec.Containers[i])
			}
		}
	}
	return w
}

func replicaSpec(n int32) *paddlev1.ReplicaSpec {
	return &paddlev1.ReplicaSpec{
		Replicas: n,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "paddle", Image: DefaultImage}},
		}},
	}
}

// PodWrapper wraps a pod whose status a test writes, standing in for a kubelet.
type PodWrapper struct{ corev1.Pod }

// WrapPod copies a pod for status changes.
func WrapPod(p *corev1.Pod) *PodWrapper { return &PodWrapper{*p.DeepCopy()} }

// Obj returns the pod.
func (w *PodWrapper) Obj() *corev1.Pod { return &w.Pod }

// Scheduled binds the pod to a node in the pod's spec (for pure tests).
func (w *PodWrapper) Scheduled(node string) *PodWrapper {
	w.Spec.NodeName = node
	return w
}

// Pending marks the pod pending with the given IP ("" for none yet).
func (w *PodWrapper) Pending(ip string) *PodWrapper {
	w.Status.Phase = corev1.PodPending
	w.setIP(ip)
	return w
}

// Running marks the pod and all its containers running with the given IP.
func (w *PodWrapper) Running(ip string) *PodWrapper {
	w.Status.Phase = corev1.PodRunning
	w.setIP(ip)
	now := metav1.NewTime(time.Now())
	w.Status.StartTime = &now
	w.Status.ContainerStatuses = nil
	for _, c := range w.Spec.Containers {
		w.Status.ContainerStatuses = append(w.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return w
}

// Succeeded marks every container exited 0.
func (w *PodWrapper) Succeeded() *PodWrapper {
	return w.terminated(corev1.PodSucceeded, "", 0)
}

// Failed marks the named container exited with code and the pod failed.
func (w *PodWrapper) Failed(container string, code int32) *PodWrapper {
	return w.terminated(corev1.PodFailed, container, code)
}

func (w *PodWrapper) terminated(phase corev1.PodPhase, failed string, code int32) *PodWrapper {
	w.Status.Phase = phase
	now := metav1.NewTime(time.Now())
	w.Status.ContainerStatuses = nil
	for _, c := range w.Spec.Containers {
		t := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: now}
		if c.Name == failed {
			t = &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", FinishedAt: now}
		}
		w.Status.ContainerStatuses = append(w.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, State: corev1.ContainerState{Terminated: t},
		})
	}
	return w
}

func (w *PodWrapper) setIP(ip string) {
	w.Status.PodIP = ip
	w.Status.PodIPs = nil
	if ip != "" {
		w.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		w.Status.HostIP = "10.0.0.1"
	}
}

// EmptyDir is an emptyDir volume.
func EmptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}
