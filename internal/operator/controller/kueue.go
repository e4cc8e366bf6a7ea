package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/truncate"
)

// Kueue: a job labelled kueue.x-k8s.io/queue-name waits for Kueue, which
// knows PaddleJobs as an external framework (its configuration lists
// PaddleJob.v1.batch.paddlepaddle.org under integrations.externalFrameworks).
// The webhook creates the job suspended; the operator keeps one Workload for
// it (a pod set per role: count and template), resumes the job with what
// the admission assigns its pods (node labels, tolerations, labels,
// annotations), and on eviction suspends it, restores its templates from the
// Workload, and once its pods are gone gives the quota back. A finished job
// finishes its Workload. This is Kueue's jobframework protocol, written
// against its API (kueue_api.go): see docs/kueue.md for why not the library.

// +kubebuilder:rbac:groups=batch.paddlepaddle.org,resources=paddlejobs,verbs=patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;workloadpriorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// ReasonQueued is the Suspended condition's reason while Kueue holds a job.
const ReasonQueued = "Queued"

// kueueStep is what a pass does for a queued job.
type kueueStep int

const (
	// kueueWait: nothing to do; the job waits (or runs) as it is.
	kueueWait kueueStep = iota
	// kueueCreate creates the job's Workload.
	kueueCreate
	// kueueRecreate deletes a Workload that no longer matches the suspended
	// job's roles; the next pass creates one that does.
	kueueRecreate
	// kueueUpdateQueue follows a change of the queue-name label.
	kueueUpdateQueue
	// kueueStart applies the admission to the templates and resumes the job.
	kueueStart
	// kueueStop suspends the job and restores its templates.
	kueueStop
	// kueueRelease gives back the quota of an evicted job whose pods are gone.
	kueueRelease
	// kueueFinish marks the Workload of a finished job Finished.
	kueueFinish
	// kueueDropFinalizer lets a finished or deleted Workload go.
	kueueDropFinalizer
	// kueuePodsReady updates the Workload's PodsReady condition.
	kueuePodsReady
)

// kueueView is what the decision reads: the job, its Workload (nil when it
// has none) and its pods.
type kueueView struct {
	job    *paddlev1.PaddleJob
	wl     *workload
	pods   []*corev1.Pod
	active bool // some pod has not terminated
}

// decideKueue is the protocol's decision for one pass.
func decideKueue(v kueueView) kueueStep {
	job, wl := v.job, v.wl
	suspended := job.Spec.IsSuspended()
	switch {
	case wl != nil && workloadCondition(wl, workloadFinished) && hasFinalizer(wl):
		return kueueDropFinalizer
	case job.Status.IsFinished():
		if wl != nil && !workloadCondition(wl, workloadFinished) {
			return kueueFinish
		}
		return kueueWait
	case wl != nil && wl.Metadata.DeletionTimestamp != nil:
		if !suspended {
			return kueueStop
		}
		if hasFinalizer(wl) {
			return kueueDropFinalizer
		}
		return kueueWait
	case wl == nil:
		switch {
		case !suspended:
			return kueueStop // running without a Workload: it queues first
		case v.active:
			return kueueWait // the suspended job's pods are being deleted
		}
		return kueueCreate
	case workloadCondition(wl, workloadEvicted):
		switch {
		case !suspended:
			return kueueStop
		case !v.active && workloadCondition(wl, workloadQuotaReserved):
			return kueueRelease
		}
		return kueueWait
	case suspended:
		switch {
		case workloadCondition(wl, workloadAdmitted):
			return kueueStart
		case !workloadCondition(wl, workloadQuotaReserved) && !equivalentPodSets(wl.Spec.PodSets, jobPodSets(job)):
			return kueueRecreate
		case wl.Spec.QueueName != job.KueueQueueName():
			return kueueUpdateQueue
		}
		return kueueWait
	case !workloadCondition(wl, workloadAdmitted):
		return kueueStop
	}
	if c := podsReadyCondition(v); !workloadConditionIs(wl, c) {
		return kueuePodsReady
	}
	return kueueWait
}

// queuedByKueue reports whether Kueue holds the job: it names a queue and
// the integration is on.
func (r *PaddleJobReconciler) queuedByKueue(job *paddlev1.PaddleJob) bool {
	return job.KueueQueueName() != "" && !r.Options.IgnoreKueue
}

// syncKueue runs the protocol for a job Kueue queues. It returns true when
// the pass ends here (the job or its Workload was changed, and that change's
// event brings the job back), and why the job waits, for the status of a
// suspended job (queuedMessage).
func (r *PaddleJobReconciler) syncKueue(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, now time.Time) (bool, string, error) {
	if !r.kueueServed {
		return false, queuedMessage(job, nil, false), nil
	}
	wl, raw, err := r.jobWorkload(ctx, job)
	if err != nil {
		return false, "", err
	}
	done, err := r.stepKueue(ctx, job, wl, raw, pods, now)
	return done, queuedMessage(job, wl, true), err
}

// stepKueue takes the protocol's step for the job and its Workload (wl and
// raw nil when it has none); true when the pass ends here.
func (r *PaddleJobReconciler) stepKueue(ctx context.Context, job *paddlev1.PaddleJob, wl *workload, raw *unstructured.Unstructured, pods []*corev1.Pod, now time.Time) (bool, error) {
	v := kueueView{job: job, wl: wl, pods: pods, active: hasActivePods(pods)}
	step := decideKueue(v)
	if step != kueueWait {
		log.FromContext(ctx).V(1).Info("kueue", "step", step, "workload", workloadName(job))
	}
	switch step {
	case kueueCreate:
		return true, r.createWorkload(ctx, job)
	case kueueRecreate:
		return true, ignoreGone(r.Delete(ctx, raw, client.Preconditions{UID: &wl.Metadata.UID}))
	case kueueUpdateQueue:
		patched := raw.DeepCopy()
		if err := unstructured.SetNestedField(patched.Object, job.KueueQueueName(), "spec", "queueName"); err != nil {
			return false, err
		}
		return true, ignoreGone(r.Patch(ctx, patched, client.MergeFromWithOptions(raw, client.MergeFromWithOptimisticLock{})))
	case kueueStart:
		return true, r.startQueuedJob(ctx, job, wl)
	case kueueStop:
		return true, r.stopQueuedJob(ctx, job, wl)
	case kueueRelease:
		return true, r.patchWorkloadStatus(ctx, raw, wl, func(st *workloadStatus) {
			releaseQuota(st, findWorkloadCondition(wl, workloadEvicted), wl.Metadata.Generation, metav1.NewTime(now))
		})
	case kueueFinish:
		reason, msg := workloadSucceeded, "the PaddleJob completed"
		if job.Status.Phase == paddlev1.PaddleJobFailed {
			reason, msg = workloadFailed, "the PaddleJob failed: "+findCondition(job, paddlev1.JobFailed).Message
		}
		return false, r.patchWorkloadStatus(ctx, raw, wl, func(st *workloadStatus) {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: workloadFinished, Status: metav1.ConditionTrue,
				Reason: reason, Message: truncate.String(msg, 32*1024), ObservedGeneration: wl.Metadata.Generation, LastTransitionTime: metav1.NewTime(now)})
		})
	case kueueDropFinalizer:
		patched := raw.DeepCopy()
		patched.SetFinalizers(slices.DeleteFunc(patched.GetFinalizers(), func(f string) bool { return f == kueueResourceInUseFinalizer }))
		return false, ignoreGone(r.Patch(ctx, patched, client.MergeFromWithOptions(raw, client.MergeFromWithOptimisticLock{})))
	case kueuePodsReady:
		c := podsReadyCondition(v)
		c.ObservedGeneration, c.LastTransitionTime = wl.Metadata.Generation, metav1.NewTime(now)
		return false, r.patchWorkloadStatus(ctx, raw, wl, func(st *workloadStatus) { meta.SetStatusCondition(&st.Conditions, c) })
	}
	return false, nil
}

// queuedMessage says why a suspended job Kueue queues waits, from its
// Workload (nil: not created yet) or Kueue's absence.
func queuedMessage(job *paddlev1.PaddleJob, wl *workload, kueueServed bool) string {
	queue := job.KueueQueueName()
	switch {
	case !kueueServed:
		return fmt.Sprintf("the job is labelled %s=%s but the cluster serves no Kueue Workloads (%s): install Kueue with %s in integrations.externalFrameworks, or remove the label",
			paddlev1.KueueQueueNameLabel, queue, WorkloadGVK.GroupVersion(), paddlev1.KueueFrameworkName)
	case wl == nil:
		return fmt.Sprintf("waiting in Kueue LocalQueue %s; its Workload is being created", queue)
	}
	why := findWorkloadCondition(wl, workloadQuotaReserved).Message
	if ev := findWorkloadCondition(wl, workloadEvicted); ev.Status == metav1.ConditionTrue {
		why = fmt.Sprintf("Kueue evicted it (%s: %s)", ev.Reason, ev.Message)
	}
	if why == "" {
		why = "not admitted yet"
	}
	return fmt.Sprintf("waiting in Kueue LocalQueue %s for admission (Workload %s): %s", queue, wl.Metadata.Name, why)
}

// workloadName is the name of a job's Workload: the job's name and a hash
// of its UID, so a recreated job never adopts its predecessor's.
func workloadName(job *paddlev1.PaddleJob) string {
	sum := sha256.Sum256([]byte(job.UID))
	return "paddlejob-" + job.Name + "-" + hex.EncodeToString(sum[:])[:5]
}

// jobWorkload is the Workload the job controls, decoded and as read, or
// nils when it has none.
func (r *PaddleJobReconciler) jobWorkload(ctx context.Context, job *paddlev1.PaddleJob) (*workload, *unstructured.Unstructured, error) {
	raw := newUnstructured(WorkloadGVK)
	if err := r.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: workloadName(job)}, raw); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if ref := metav1.GetControllerOf(raw); ref == nil || ref.UID != job.UID {
		return nil, nil, fmt.Errorf("Workload %s/%s exists and is not the job's", raw.GetNamespace(), raw.GetName())
	}
	wl := &workload{}
	if err := fromUnstructured(raw, wl); err != nil {
		return nil, nil, fmt.Errorf("decoding Workload %s/%s: %w", raw.GetNamespace(), raw.GetName(), err)
	}
	return wl, raw, nil
}

// jobPodSets are the job's roles as Kueue pod sets: as many pods as the
// role has replicas, and its template as the user wrote it.
func jobPodSets(job *paddlev1.PaddleJob) []podSet {
	var sets []podSet
	for _, rt := range paddlev1.ReplicaTypes {
		rs := job.Spec.Replicas(rt)
		if rs == nil {
			continue
		}
		sets = append(sets, podSet{Name: string(rt), Count: int32(job.Spec.ReplicaCount(rt)), Template: *rs.Template.DeepCopy()})
	}
	return sets
}

func equivalentPodSets(a, b []podSet) bool {
	return len(a) == len(b) && slices.EqualFunc(a, b, func(x, y podSet) bool {
		return x.Name == y.Name && x.Count == y.Count && equality.Semantic.DeepEqual(x.Template.Spec, y.Template.Spec)
	})
}

func (r *PaddleJobReconciler) createWorkload(ctx context.Context, job *paddlev1.PaddleJob) error {
	wl := &workload{
		Metadata: metav1.ObjectMeta{
			Name:            workloadName(job),
			Namespace:       job.Namespace,
			Labels:          map[string]string{paddlev1.LabelJobName: job.Name, kueueJobUIDLabel: string(job.UID)},
			Finalizers:      []string{kueueResourceInUseFinalizer},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))},
		},
		Spec: workloadSpec{PodSets: jobPodSets(job), QueueName: job.KueueQueueName()},
	}
	ref, priority, err := r.jobPriority(ctx, job)
	if err != nil {
		return err
	}
	wl.Spec.PriorityClassRef, wl.Spec.Priority = ref, priority
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(wl)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(WorkloadGVK)
	if err := r.Create(ctx, u); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache had not shown it yet
		}
		return fmt.Errorf("creating Workload %s/%s: %w", job.Namespace, wl.Metadata.Name, err)
	}
	r.eventf(job, corev1.EventTypeNormal, "CreatedWorkload", "Queue", "created Workload %s in Kueue LocalQueue %s", wl.Metadata.Name, wl.Spec.QueueName)
	return nil
}

// jobPriority is the job's priority as Kueue reads it: the
// WorkloadPriorityClass its label names, else the PriorityClass its first
// template names, else none (Kueue's default).
func (r *PaddleJobReconciler) jobPriority(ctx context.Context, job *paddlev1.PaddleJob) (*priorityClassRef, *int32, error) {
	if name := job.Labels[paddlev1.KueuePriorityClassLabel]; name != "" {
		wpc := newUnstructured(WorkloadPriorityClassGVK)
		if err := r.Get(ctx, types.NamespacedName{Name: name}, wpc); err != nil {
			return nil, nil, fmt.Errorf("the WorkloadPriorityClass of label %s: %w", paddlev1.KueuePriorityClassLabel, err)
		}
		value, _, err := unstructured.NestedInt64(wpc.Object, "value")
		if err != nil {
			return nil, nil, fmt.Errorf("WorkloadPriorityClass %s: %w", name, err)
		}
		return &priorityClassRef{Group: WorkloadPriorityClassGVK.Group, Kind: workloadPriorityClassKind, Name: name}, ptr.To(int32(value)), nil
	}
	for _, ps := range jobPodSets(job) {
		if name := ps.Template.Spec.PriorityClassName; name != "" {
			pc := &schedulingv1.PriorityClass{}
			if err := r.Get(ctx, types.NamespacedName{Name: name}, pc); err != nil {
				return nil, nil, fmt.Errorf("the PriorityClass of spec.%s.template: %w", ps.Name, err)
			}
			return &priorityClassRef{Group: podPriorityClassGroup, Kind: podPriorityClassKind, Name: name}, ptr.To(pc.Value), nil
		}
	}
	return nil, nil, nil
}

// startQueuedJob resumes an admitted job, its templates given what Kueue
// assigned each pod set.
func (r *PaddleJobReconciler) startQueuedJob(ctx context.Context, job *paddlev1.PaddleJob, wl *workload) error {
	updates, err := r.admittedPodSets(ctx, wl)
	if err != nil {
		return err
	}
	started := job.DeepCopy()
	for _, u := range updates {
		rs := started.Spec.Replicas(paddlev1.ReplicaType(u.Name))
		if rs == nil {
			return fmt.Errorf("Workload %s admits pod set %q, which the job has not", wl.Metadata.Name, u.Name)
		}
		applyPodSetUpdate(&rs.Template, u)
	}
	started.Spec.Suspend = ptr.To(false)
	if err := r.Patch(ctx, started, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreGone(err)
	}
	if wl.Status.Admission != nil {
		r.eventf(job, corev1.EventTypeNormal, "Started", "Start", "admitted by Kueue ClusterQueue %s", wl.Status.Admission.ClusterQueue)
	}
	return nil
}

// admittedPodSets is what the admission asks of each pod set's pods: its
// flavors' node labels and tolerations, Kueue's pod-set label, and what
// admission checks add.
func (r *PaddleJobReconciler) admittedPodSets(ctx context.Context, wl *workload) ([]podSetUpdate, error) {
	if wl.Status.Admission == nil {
		return nil, nil
	}
	var out []podSetUpdate
	for _, a := range wl.Status.Admission.PodSetAssignments {
		u := podSetUpdate{Name: a.Name, Labels: map[string]string{kueuePodSetLabel: a.Name}, NodeSelector: map[string]string{}}
		for _, flavor := range slices.Sorted(maps.Values(a.Flavors)) {
			spec, err := r.resourceFlavor(ctx, flavor)
			if err != nil {
				return nil, err
			}
			maps.Copy(u.NodeSelector, spec.NodeLabels)
			u.Tolerations = appendMissing(u.Tolerations, spec.Tolerations...)
		}
		for _, check := range wl.Status.AdmissionChecks {
			for _, cu := range check.PodSetUpdates {
				if cu.Name != a.Name {
					continue
				}
				maps.Copy(u.Labels, cu.Labels)
				if u.Annotations == nil && len(cu.Annotations) > 0 {
					u.Annotations = map[string]string{}
				}
				maps.Copy(u.Annotations, cu.Annotations)
				maps.Copy(u.NodeSelector, cu.NodeSelector)
				u.Tolerations = appendMissing(u.Tolerations, cu.Tolerations...)
			}
		}
		out = append(out, u)
	}
	return out, nil
}

func (r *PaddleJobReconciler) resourceFlavor(ctx context.Context, name string) (resourceFlavorSpec, error) {
	rf := newUnstructured(ResourceFlavorGVK)
	if err := r.Get(ctx, types.NamespacedName{Name: name}, rf); err != nil {
		return resourceFlavorSpec{}, fmt.Errorf("ResourceFlavor %s: %w", name, err)
	}
	var spec resourceFlavorSpec
	if m, ok := rf.Object["spec"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
			return spec, fmt.Errorf("ResourceFlavor %s: %w", name, err)
		}
	}
	return spec, nil
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

// stopQueuedJob suspends a job Kueue has not admitted (or evicted) and
// gives its templates back the scheduling fields they had when queued: the
// Workload's pod sets hold them as the user wrote them.
func (r *PaddleJobReconciler) stopQueuedJob(ctx context.Context, job *paddlev1.PaddleJob, wl *workload) error {
	stopped := job.DeepCopy()
	stopped.Spec.Suspend = ptr.To(true)
	why := "queued in Kueue LocalQueue " + job.KueueQueueName() + " before it runs"
	if wl != nil {
		for _, ps := range wl.Spec.PodSets {
			if rs := stopped.Spec.Replicas(paddlev1.ReplicaType(ps.Name)); rs != nil {
				restoreSchedulingFields(&rs.Template, ps.Template)
			}
		}
		switch ev := findWorkloadCondition(wl, workloadEvicted); {
		case ev.Status == metav1.ConditionTrue:
			why = fmt.Sprintf("evicted by Kueue (%s: %s)", ev.Reason, ev.Message)
		case wl.Metadata.DeletionTimestamp != nil:
			why = "its Workload " + wl.Metadata.Name + " is being deleted"
		default:
			why = "its Workload " + wl.Metadata.Name + " is not admitted"
		}
	}
	if err := r.Patch(ctx, stopped, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreGone(err)
	}
	r.eventf(job, corev1.EventTypeNormal, "Stopped", "Suspend", "suspended: %s", why)
	return nil
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

// releaseQuota clears an evicted Workload's admission: Kueue queues it
// again, at once when it was preempted or lost its nodes.
func releaseQuota(st *workloadStatus, evicted metav1.Condition, generation int64, now metav1.Time) {
	requeued := metav1.ConditionFalse
	if evicted.Reason == workloadPreempted || evicted.Reason == workloadNodeFailures {
		requeued = metav1.ConditionTrue
	}
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason,
			Message: msg, ObservedGeneration: generation, LastTransitionTime: now})
	}
	set(workloadRequeued, requeued, evicted.Reason, evicted.Message)
	set(workloadQuotaReserved, metav1.ConditionFalse, workloadPending, evicted.Message)
	set(workloadAdmitted, metav1.ConditionFalse, workloadNoReservation, "The workload has no reservation")
	st.Admission = nil
}

// podsReadyCondition is the Workload's PodsReady condition for a running
// job: True once every pod runs ready or has succeeded.
func podsReadyCondition(v kueueView) metav1.Condition {
	ready := 0
	for _, p := range v.pods {
		if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodSucceeded || (p.Status.Phase == corev1.PodRunning && podReady(p))) {
			ready++
		}
	}
	was := findWorkloadCondition(v.wl, workloadPodsReady)
	if ready >= v.job.Spec.TotalReplicas() {
		reason := workloadStarted
		if was.Reason == workloadWaitForRecovery || was.Reason == workloadRecovered {
			reason = workloadRecovered
		}
		return metav1.Condition{Type: workloadPodsReady, Status: metav1.ConditionTrue, Reason: reason, Message: "All pods reached readiness and the workload is running"}
	}
	if was.Status == metav1.ConditionTrue || was.Reason == workloadWaitForRecovery {
		return metav1.Condition{Type: workloadPodsReady, Status: metav1.ConditionFalse, Reason: workloadWaitForRecovery, Message: "At least one pod has failed, waiting for recovery"}
	}
	return metav1.Condition{Type: workloadPodsReady, Status: metav1.ConditionFalse, Reason: workloadWaitForStart, Message: "Not all pods are ready or succeeded"}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hasActivePods reports whether some pod of the job has not terminated
// (terminating pods count: they may still hold their node's resources).
func hasActivePods(pods []*corev1.Pod) bool {
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool {
		return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	})
}

// patchWorkloadStatus writes the Workload's status as change leaves it,
// failing on a concurrent write (Kueue's) so that the next pass decides
// again from the newer Workload.
func (r *PaddleJobReconciler) patchWorkloadStatus(ctx context.Context, raw *unstructured.Unstructured, wl *workload, change func(*workloadStatus)) error {
	st := wl.Status
	st.Conditions = slices.Clone(st.Conditions)
	change(&st)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	patched := raw.DeepCopy()
	status, _, _ := unstructured.NestedMap(patched.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	status["conditions"] = obj["conditions"]
	if st.Admission == nil {
		delete(status, "admission")
	}
	patched.Object["status"] = status
	err = r.Status().Patch(ctx, patched, client.MergeFromWithOptions(raw, client.MergeFromWithOptimisticLock{}))
	return ignoreGone(err)
}

func workloadCondition(wl *workload, t string) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, t)
}

func workloadConditionIs(wl *workload, c metav1.Condition) bool {
	have := findWorkloadCondition(wl, c.Type)
	return have.Status == c.Status && have.Reason == c.Reason
}

func findWorkloadCondition(wl *workload, t string) metav1.Condition {
	if wl != nil {
		if c := meta.FindStatusCondition(wl.Status.Conditions, t); c != nil {
			return *c
		}
	}
	return metav1.Condition{}
}

func hasFinalizer(wl *workload) bool {
	return slices.Contains(wl.Metadata.Finalizers, kueueResourceInUseFinalizer)
}

// ignoreGone ignores writes to an object deleted meanwhile; conflicts are
// returned, so the pass is retried from the newer object.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
