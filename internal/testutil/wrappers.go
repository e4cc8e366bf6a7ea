package testutil

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// DefaultImage is the image of the containers the wrappers create.
const DefaultImage = "registry.example.com/paddle/trainer:test"

// JobWrapper builds a PaddleJob for tests on the public builder
// (pkg/client's JobBuilder): what the builder sets, it sets; the rest — what
// only tests need — are edits applied, in order, when Obj is called.
type JobWrapper struct {
	builder *client.JobBuilder
	edits   []func(*paddlev1.PaddleJob)
}

// MakePaddleJob starts a job with no roles.
func MakePaddleJob(name, namespace string) *JobWrapper {
	return &JobWrapper{builder: client.NewJob(name, namespace)}
}

// Obj returns the job.
func (w *JobWrapper) Obj() *paddlev1.PaddleJob {
	job := w.builder.Obj()
	for _, edit := range w.edits {
		edit(job)
	}
	return job
}

func (w *JobWrapper) edit(fn func(*paddlev1.PaddleJob)) *JobWrapper {
	w.edits = append(w.edits, fn)
	return w
}

// PS sets n parameter servers with a default container.
func (w *JobWrapper) PS(n int32) *JobWrapper {
	w.builder.PS(n, defaultTemplate())
	return w
}

// Workers sets n workers with a default container.
func (w *JobWrapper) Workers(n int32) *JobWrapper {
	w.builder.Workers(n, defaultTemplate())
	return w
}

// Heter sets n heterogeneous trainers with a default container.
func (w *JobWrapper) Heter(n int32) *JobWrapper {
	w.builder.Heter(n, defaultTemplate())
	return w
}

// Intranet sets spec.intranet.
func (w *JobWrapper) Intranet(i paddlev1.Intranet) *JobWrapper {
	w.builder.Intranet(i)
	return w
}

// WithGloo sets spec.withGloo.
func (w *JobWrapper) WithGloo(level int32) *JobWrapper {
	w.builder.WithGloo(level)
	return w
}

// CleanPodPolicy sets spec.cleanPodPolicy.
func (w *JobWrapper) CleanPodPolicy(p paddlev1.CleanPodPolicy) *JobWrapper {
	w.builder.CleanPodPolicy(p)
	return w
}

// UID sets the job's UID, which a fake client does not assign.
func (w *JobWrapper) UID(uid string) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.UID = types.UID(uid) })
}

// Elastic makes the workers elastic between min and max, rendezvousing in
// the etcd at endpoints (none: the operator's).
func (w *JobWrapper) Elastic(minReplicas, maxReplicas int32, endpoints ...string) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) {
		j.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: &minReplicas, MaxReplicas: &maxReplicas, EtcdEndpoints: endpoints}
	})
}

// Queue sends the job to a Kueue LocalQueue (label kueue.x-k8s.io/queue-name).
func (w *JobWrapper) Queue(name string) *JobWrapper {
	return w.Label(paddlev1.KueueQueueNameLabel, name)
}

// Label sets a label of the job.
func (w *JobWrapper) Label(key, value string) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) {
		if j.Labels == nil {
			j.Labels = map[string]string{}
		}
		j.Labels[key] = value
	})
}

// ManagedBy sets spec.managedBy.
func (w *JobWrapper) ManagedBy(controller string) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.ManagedBy = ptr.To(controller) })
}

// Suspend sets spec.suspend.
func (w *JobWrapper) Suspend(suspend bool) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.Suspend = ptr.To(suspend) })
}

// TTLSecondsAfterFinished sets spec.ttlSecondsAfterFinished.
func (w *JobWrapper) TTLSecondsAfterFinished(seconds int32) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.TTLSecondsAfterFinished = ptr.To(seconds) })
}

// BackoffLimit sets spec.backoffLimit.
func (w *JobWrapper) BackoffLimit(n int32) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.BackoffLimit = ptr.To(n) })
}

// RestartScope sets spec.restartScope.
func (w *JobWrapper) RestartScope(s paddlev1.RestartScope) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.RestartScope = s })
}

// ProgressDeadlineSeconds sets spec.progressDeadlineSeconds.
func (w *JobWrapper) ProgressDeadlineSeconds(seconds int64) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.ProgressDeadlineSeconds = ptr.To(seconds) })
}

// RolePolicy sets a role's restartPolicy (the job's, not the template's).
func (w *JobWrapper) RolePolicy(rt paddlev1.ReplicaType, p paddlev1.RestartPolicy) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.Replicas(rt).RestartPolicy = p })
}

// SchedulingPolicy sets spec.schedulingPolicy.
func (w *JobWrapper) SchedulingPolicy(p paddlev1.SchedulingPolicy) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.SchedulingPolicy = &p })
}

// Status sets the job's status, as the operator would have written it.
func (w *JobWrapper) Status(st paddlev1.PaddleJobStatus) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Status = st })
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
	return w.edit(func(j *paddlev1.PaddleJob) {
		c := &j.Spec.Replicas(rt).Template.Spec.Containers[0]
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits["nvidia.com/gpu"] = *resource.NewQuantity(n, resource.DecimalSI)
	})
}

// RestartPolicy sets the pod restart policy of a role's template.
func (w *JobWrapper) RestartPolicy(rt paddlev1.ReplicaType, p corev1.RestartPolicy) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.Replicas(rt).Template.Spec.RestartPolicy = p })
}

// SchedulerName sets the scheduler name of a role's template.
func (w *JobWrapper) SchedulerName(rt paddlev1.ReplicaType, name string) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) { j.Spec.Replicas(rt).Template.Spec.SchedulerName = name })
}

func (w *JobWrapper) eachContainer(fn func(paddlev1.ReplicaType, *corev1.Container)) *JobWrapper {
	return w.edit(func(j *paddlev1.PaddleJob) {
		for _, rt := range paddlev1.ReplicaTypes {
			if rs := j.Spec.Replicas(rt); rs != nil {
				for i := range rs.Template.Spec.Containers {
					fn(rt, &rs.Template.Spec.Containers[i])
				}
			}
		}
	})
}

func defaultTemplate() corev1.PodTemplateSpec { return client.Container("paddle", DefaultImage) }

// PodWrapper wraps a pod whose status a test writes, standing in for a kubelet.
type PodWrapper struct{ corev1.Pod }

// WrapPod copies a pod for status changes.
func WrapPod(p *corev1.Pod) *PodWrapper { return &PodWrapper{*p.DeepCopy()} }

// MakePod starts the pod of a job's role and index as the operator names,
// labels and owns it (job.UID is its controller), with the default
// container and a UID of its own: a pod a fake client can be seeded with, as
// if the operator had created it earlier.
func MakePod(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, index int) *PodWrapper {
	name := paddlev1.PodName(job.Name, rt, index)
	return &PodWrapper{corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: job.Namespace,
			UID:       types.UID(name + "-uid"),
			Labels: map[string]string{
				paddlev1.LabelJobName:      job.Name,
				paddlev1.LabelReplicaType:  string(rt),
				paddlev1.LabelReplicaIndex: strconv.Itoa(index),
			},
			Annotations:     map[string]string{},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))},
		},
		Spec: defaultTemplate().Spec,
	}}
}

// UID sets the pod's UID (a recreated pod has a new one).
func (w *PodWrapper) UID(uid string) *PodWrapper {
	w.Pod.UID = types.UID(uid)
	return w
}

// Annotation sets an annotation of the pod.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

// Terminating marks the pod as being deleted (a finalizer holds it).
func (w *PodWrapper) Terminating() *PodWrapper {
	now := metav1.NewTime(time.Now())
	w.DeletionTimestamp = &now
	w.Finalizers = append(w.Finalizers, "test.paddlejob/hold")
	return w
}

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

// Unschedulable marks the pod pending and unplaced, with the scheduler's
// message.
func (w *PodWrapper) Unschedulable(msg string) *PodWrapper {
	w.Status.Phase = corev1.PodPending
	w.Status.Conditions = append(w.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg,
	})
	return w
}

// Waiting marks the pod pending on a node with its first container waiting
// for the given reason, as the kubelet reports an image it cannot pull.
func (w *PodWrapper) Waiting(reason, msg string) *PodWrapper {
	w.Status.Phase = corev1.PodPending
	w.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: w.Spec.Containers[0].Name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
	}}
	return w
}

// Running marks the pod and all its containers running with the given IP.
func (w *PodWrapper) Running(ip string) *PodWrapper {
	w.Status.Phase = corev1.PodRunning
	w.setIP(ip)
	now := metav1.NewTime(time.Now())
	w.Status.StartTime = &now
	w.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	w.Status.ContainerStatuses = nil
	for _, c := range w.Spec.Containers {
		w.Status.ContainerStatuses = append(w.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return w
}

// Unready marks a running pod not Ready: its readiness probe has not passed.
func (w *PodWrapper) Unready() *PodWrapper {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == corev1.PodReady {
			w.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	for i := range w.Status.ContainerStatuses {
		w.Status.ContainerStatuses[i].Ready = false
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

// FinishedAt sets when the pod's terminated containers finished (Failed
// and Succeeded say now): a failure's time decides which failures the
// operator judges together.
func (w *PodWrapper) FinishedAt(at time.Time) *PodWrapper {
	for i := range w.Status.ContainerStatuses {
		if t := w.Status.ContainerStatuses[i].State.Terminated; t != nil {
			t.FinishedAt = metav1.NewTime(at)
		}
	}
	return w
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
