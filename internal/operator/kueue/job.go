package kueue

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	kueueapi "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// job is a PaddleJob as Kueue's jobframework sees a job (its GenericJob:
// IsSuspended, Suspend, RunWithPodSetsInfo, RestorePodSetsInfo, PodSets,
// Finished, PodsReady). It reads the whole job but changes only
// spec.suspend and the roles' templates and replica counts: the rest of the
// job is the PaddleJob controller's.
type job struct {
	*paddlev1.PaddleJob
}

// podSetInfo is what an admission gives one pod set: how many pods, and
// what they carry (flavors' node labels and tolerations, Kueue's pod-set
// label, admission checks' updates).
type podSetInfo struct {
	podSetUpdate
	Count int32
}

func (j job) IsSuspended() bool { return j.Spec.IsSuspended() }

func (j job) Suspend() { j.Spec.Suspend = ptr.To(true) }

// managedElsewhere: spec.managedBy names another controller (MultiKueue in
// a manager cluster), which runs the job's pods elsewhere and mirrors its
// status here; Kueue still queues it in this cluster.
func (j job) managedElsewhere() bool { return !j.Spec.IsManagedByOperator() }

// prebuiltWorkload is the Workload MultiKueue made for the job, "" when the
// job makes its own. Kueue names it in an annotation (0.18 and later, its
// WorkloadIdentifierAnnotations), before in a label of the same key.
func (j job) prebuiltWorkload() string {
	if name := j.Annotations[kueuePrebuiltWorkloadKey]; name != "" {
		return name
	}
	return j.Labels[kueuePrebuiltWorkloadKey]
}

// PodSets are the job's roles as Kueue pod sets: as many pods as the role
// has replicas and its template as the user wrote it. The workers of an
// elastic job may be admitted down to the job's minimum (partial admission).
func (j job) PodSets() []podSet {
	var sets []podSet
	for _, rt := range paddlev1.ReplicaTypes {
		rs := j.Spec.Replicas(rt)
		if rs == nil {
			continue
		}
		ps := podSet{Name: kueueapi.PodSetReference(rt), Count: int32(j.Spec.ReplicaCount(rt)), Template: *rs.Template.DeepCopy()}
		if lowest, ok := j.lowestCount(rt); ok && lowest < ps.Count {
			ps.MinCount = ptr.To(lowest)
		}
		sets = append(sets, ps)
	}
	return sets
}

// lowestCount is the fewest pods a role runs with, when it may run with
// fewer than its replicas: the workers of an elastic job (Paddle's elastic
// launcher takes any count between the bounds). Parameter servers, heter
// trainers and collective workers run with all their pods: the training
// program's world is fixed.
func (j job) lowestCount(rt paddlev1.ReplicaType) (int32, bool) {
	if rt != paddlev1.ReplicaWorker || !j.Spec.IsElastic() {
		return 0, false
	}
	lowest, _ := j.Spec.ElasticBounds()
	return lowest, true
}

// refusedCount says why an admission of count pods to a role cannot run,
// "" when it can.
func (j job) refusedCount(role string, count int32) string {
	rt := paddlev1.ReplicaType(role)
	if j.Spec.Replicas(rt) == nil {
		return fmt.Sprintf("Kueue admitted pod set %q, which the job has not", role)
	}
	want := int32(j.Spec.ReplicaCount(rt))
	if count == want {
		return ""
	}
	if lowest, ok := j.lowestCount(rt); ok && count >= lowest && count <= want {
		return ""
	}
	return fmt.Sprintf("Kueue admitted %d of the %d %s pods; only the workers of an elastic job run with fewer pods than their replicas, down to the elastic minimum", count, want, role)
}

// RunWithPodSetsInfo resumes the job as admitted: each role's template gets
// what its pod set was assigned and its replicas the admitted count.
func (j job) RunWithPodSetsInfo(infos []podSetInfo) error {
	for _, info := range infos {
		if why := j.refusedCount(string(info.Name), info.Count); why != "" {
			return fmt.Errorf("%s", why)
		}
	}
	for _, info := range infos {
		rs := j.Spec.Replicas(paddlev1.ReplicaType(info.Name))
		applyPodSetUpdate(&rs.Template, info.podSetUpdate)
		if info.Count != int32(j.Spec.ReplicaCount(paddlev1.ReplicaType(info.Name))) {
			rs.Replicas = info.Count
		}
	}
	j.Spec.Suspend = ptr.To(false)
	return nil
}

// RestorePodSetsInfo gives each role back what its pod set had when
// queued: the Workload's pod sets hold the templates as the user wrote them
// and the replica counts. It reports whether anything changed.
func (j job) RestorePodSetsInfo(sets []podSet) bool {
	changed := false
	for _, ps := range sets {
		rs := j.Spec.Replicas(paddlev1.ReplicaType(ps.Name))
		if rs == nil {
			continue
		}
		before := rs.DeepCopy()
		restoreSchedulingFields(&rs.Template, ps.Template)
		if int32(j.Spec.ReplicaCount(paddlev1.ReplicaType(ps.Name))) != ps.Count {
			rs.Replicas = ps.Count
		}
		changed = changed || !equality.Semantic.DeepEqual(before, rs)
	}
	return changed
}

// Finished reports whether the job has finished, whether it succeeded and
// the message Kueue's Workload is finished with.
func (j job) Finished() (message string, success, finished bool) {
	if !j.Status.IsFinished() {
		return "", false, false
	}
	if j.Status.Phase == paddlev1.PaddleJobFailed {
		for _, c := range j.Status.Conditions {
			if c.Type == paddlev1.JobFailed {
				return "the PaddleJob failed: " + c.Message, false, true
			}
		}
		return "the PaddleJob failed", false, true
	}
	return "the PaddleJob completed", true, true
}

// PodsReady reports whether every pod of the job runs ready or has
// succeeded.
func (j job) PodsReady(pods []*corev1.Pod) bool {
	ready := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodSucceeded || (p.Status.Phase == corev1.PodRunning && podReady(p))) {
			ready++
		}
	}
	return ready >= j.Spec.TotalReplicas()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// applyPodSetUpdate adds an admission's labels, annotations, node selector
// and tolerations to a template.
func applyPodSetUpdate(t *corev1.PodTemplateSpec, u podSetUpdate) {
	if len(u.Labels) > 0 && t.Labels == nil {
		t.Labels = map[string]string{}
	}
	maps.Copy(t.Labels, u.Labels)
	if len(u.Annotations) > 0 && t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	maps.Copy(t.Annotations, u.Annotations)
	if len(u.NodeSelector) > 0 && t.Spec.NodeSelector == nil {
		t.Spec.NodeSelector = map[string]string{}
	}
	maps.Copy(t.Spec.NodeSelector, u.NodeSelector)
	t.Spec.Tolerations = appendMissing(t.Spec.Tolerations, u.Tolerations...)
}

func appendMissing(list []corev1.Toleration, add ...corev1.Toleration) []corev1.Toleration {
	for _, t := range add {
		if !slices.ContainsFunc(list, func(have corev1.Toleration) bool { return equality.Semantic.DeepEqual(have, t) }) {
			list = append(list, t)
		}
	}
	return list
}

// restoreSchedulingFields sets what an admission may change in a template
// back to the original's.
func restoreSchedulingFields(t *corev1.PodTemplateSpec, original corev1.PodTemplateSpec) {
	t.Labels = maps.Clone(original.Labels)
	t.Annotations = maps.Clone(original.Annotations)
	t.Spec.NodeSelector = maps.Clone(original.Spec.NodeSelector)
	t.Spec.Tolerations = slices.Clone(original.Spec.Tolerations)
	t.Spec.SchedulingGates = slices.Clone(original.Spec.SchedulingGates)
}

// equivalentPodSets reports whether a Workload's pod sets are the job's:
// names, counts and pod specs (an admission adds only metadata and
// scheduling fields, which a suspended job has had restored).
func equivalentPodSets(a, b []podSet) bool {
	return len(a) == len(b) && slices.EqualFunc(a, b, func(x, y podSet) bool {
		return x.Name == y.Name && x.Count == y.Count && ptr.Deref(x.MinCount, 0) == ptr.Deref(y.MinCount, 0) &&
			equality.Semantic.DeepEqual(x.Template.Spec, y.Template.Spec)
	})
}
