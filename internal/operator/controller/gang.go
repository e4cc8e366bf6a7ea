package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// Gang scheduling: a job that asks for it gets a PodGroup named after it, its
// pods carry the group and the gang scheduler's name, and — with Volcano —
// the pods are created only once Volcano has admitted the group (Inqueue), so
// a job never holds part of the cluster waiting for the rest.
//
// PodGroups are handled as unstructured objects: a handful of fields of two
// schedulers' APIs do not justify their modules in the dependency graph.

// Gang schedulers, as the --gang-scheduler flag names them
// (internal/operator/podcontract decides a job's).
const (
	GangVolcano                 = podcontract.GangVolcano
	GangSchedulerPlugins        = podcontract.GangSchedulerPlugins
	GangNone                    = podcontract.GangNone
	DefaultSchedulerPluginsName = podcontract.DefaultSchedulerPluginsName
	VolcanoSchedulerName        = podcontract.VolcanoSchedulerName

	// volcanoGroupAnnotation tells Volcano a pod's group.
	volcanoGroupAnnotation = "scheduling.k8s.io/group-name"
	// coschedulingGroupLabel tells scheduler-plugins a pod's group.
	coschedulingGroupLabel = "scheduling.x-k8s.io/pod-group"
)

// PodGroupGVKs are the PodGroup kinds of the gang schedulers.
var PodGroupGVKs = map[string]schema.GroupVersionKind{
	GangVolcano:          {Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"},
	GangSchedulerPlugins: {Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"},
}

// GangSchedulerFor is the gang scheduler of a job under the operator's
// options (podcontract.GangScheduler).
func GangSchedulerFor(spec *paddlev1.PaddleJobSpec, opts Options) string {
	return podcontract.GangScheduler(spec, opts.gangSettings())
}

// gangSettings are the options that choose a job's gang scheduler.
func (o Options) gangSettings() podcontract.GangSettings {
	return podcontract.GangSettings{Default: o.GangScheduler, SchedulerPluginsName: o.SchedulerPluginsName}
}

// schedulerNameOf is the scheduler name pods of a gang scheduler need.
func schedulerNameOf(gang string, opts Options) string {
	if gang == GangVolcano {
		return VolcanoSchedulerName
	}
	return opts.SchedulerPluginsName
}

// gangPod puts a pod in its job's group for the gang scheduler.
func gangPod(pod *corev1.Pod, job, gang, schedulerName string) {
	if gang == "" {
		return
	}
	if pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName {
		pod.Spec.SchedulerName = schedulerName
	}
	switch gang {
	case GangVolcano:
		pod.Annotations[volcanoGroupAnnotation] = job
	case GangSchedulerPlugins:
		pod.Labels[coschedulingGroupLabel] = job
	}
}

// desiredPodGroupSpec is the spec of a job's PodGroup: every pod (or
// minAvailable) scheduled together, with the resources they request.
func desiredPodGroupSpec(job *paddlev1.PaddleJob, gang string) map[string]any {
	minMember := int64(job.Spec.TotalReplicas())
	var minResources corev1.ResourceList
	if p := job.Spec.SchedulingPolicy; p != nil {
		if p.MinAvailable != nil {
			minMember = int64(*p.MinAvailable)
		}
		minResources = p.MinResources
	}
	if len(minResources) == 0 {
		minResources = requestedResources(job)
	}
	spec := map[string]any{"minMember": minMember}
	if len(minResources) > 0 {
		res := map[string]any{}
		for name, q := range minResources {
			res[string(name)] = q.String()
		}
		spec["minResources"] = res
	}
	if p := job.Spec.SchedulingPolicy; gang == GangVolcano && p != nil {
		if p.Queue != "" {
			spec["queue"] = p.Queue
		}
		if p.PriorityClass != "" {
			spec["priorityClassName"] = p.PriorityClass
		}
	}
	return spec
}

// requestedResources sums what every pod of the job requests (its limits
// where it requests nothing).
func requestedResources(job *paddlev1.PaddleJob) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, rt := range paddlev1.ReplicaTypes {
		rs := job.Spec.Replicas(rt)
		if rs == nil {
			continue
		}
		for _, c := range rs.Template.Spec.Containers {
			res := c.Resources.Requests
			if len(res) == 0 {
				res = c.Resources.Limits
			}
			for name, q := range res {
				sum := total[name]
				for i := int32(0); i < rs.Replicas; i++ {
					sum.Add(q)
				}
				total[name] = sum
			}
		}
	}
	return total
}

func newPodGroup(job *paddlev1.PaddleJob, gang string) *unstructured.Unstructured {
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(PodGroupGVKs[gang])
	pg.SetNamespace(job.Namespace)
	pg.SetName(job.Name)
	pg.SetLabels(map[string]string{paddlev1.LabelJobName: job.Name})
	pg.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))})
	pg.Object["spec"] = desiredPodGroupSpec(job, gang)
	return pg
}

// podGroupWaiting says what a job waits for before its pods may be created,
// "" when its PodGroup is admitted. Only Volcano admits groups before their
// pods exist (phase Inqueue); coscheduling holds pods at its permit stage.
func podGroupWaiting(pg *unstructured.Unstructured, gang string) string {
	if gang != GangVolcano {
		return ""
	}
	phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
	switch phase {
	case "Inqueue", "Running", "Completed":
		return ""
	case "":
		phase = "not yet seen by Volcano"
	}
	queue, _, _ := unstructured.NestedString(pg.Object, "spec", "queue")
	if queue == "" {
		queue = "default"
	}
	return fmt.Sprintf("Volcano has not admitted PodGroup %s (phase %s, queue %s): the job's pods are created once it is Inqueue", pg.GetName(), phase, queue)
}

// setPodGroupCondition records whether the gang scheduler (if any) admitted
// the job's pod group, or what it waits for.
func setPodGroupCondition(st *paddlev1.PaddleJobStatus, gang, waiting string, now metav1.Time) {
	switch {
	case gang == "":
	case waiting != "":
		setCondition(st, now, paddlev1.JobPodGroupAdmitted, metav1.ConditionFalse, ReasonWaitingForPodGroup, waiting)
	default:
		setCondition(st, now, paddlev1.JobPodGroupAdmitted, metav1.ConditionTrue, ReasonPodGroupAdmitted,
			fmt.Sprintf("%s admitted the job's pod group", gang))
	}
}

// ensurePodGroup creates or updates a gang-scheduled job's PodGroup and says
// whether its pods may be created, or what they wait for.
func (r *PaddleJobReconciler) ensurePodGroup(ctx context.Context, job *paddlev1.PaddleJob) (admitted bool, waiting string, err error) {
	gang := GangSchedulerFor(&job.Spec, r.Options)
	if gang == "" {
		return true, "", nil
	}
	gvk := PodGroupGVKs[gang]
	if !r.podGroupKinds[gang] {
		return false, fmt.Sprintf("the cluster serves no %s PodGroups (%s): install %s or remove the job's schedulingPolicy and schedulerName",
			gang, gvk.GroupVersion(), gang), nil
	}
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(gvk)
	err = r.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: job.Name}, pg)
	switch {
	case apierrors.IsNotFound(err):
		pg = newPodGroup(job, gang)
		if err := r.Create(ctx, pg); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, "", fmt.Errorf("creating the %s PodGroup of %s/%s: %w", gang, job.Namespace, job.Name, err)
		}
		r.eventf(job, corev1.EventTypeNormal, "CreatedPodGroup", "Create", "created %s PodGroup %s", gang, job.Name)
	case err != nil:
		return false, "", err
	case !metav1.IsControlledBy(pg, job):
		// A PodGroup the user made for the job (paddle-operator's Volcano example
		// ships one beside its PaddleJob): use it as it is.
	default:
		want := desiredPodGroupSpec(job, gang)
		have, _, _ := unstructured.NestedMap(pg.Object, "spec")
		merged := runtime.DeepCopyJSON(have)
		for k, v := range want {
			merged[k] = v
		}
		if !equality.Semantic.DeepEqual(runtime.DeepCopyJSONValue(have), runtime.DeepCopyJSONValue(merged)) {
			pg.Object["spec"] = merged
			if err := r.Update(ctx, pg); err != nil {
				return false, "", fmt.Errorf("updating PodGroup %s/%s: %w", job.Namespace, job.Name, err)
			}
		}
	}
	if w := podGroupWaiting(pg, gang); w != "" {
		return false, w, nil
	}
	return true, "", nil
}
