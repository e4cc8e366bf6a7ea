package kueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueueapi "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/truncate"
)

// workloadName is the name of the Workload a job creates: the job's name
// and a hash of its UID, so a recreated job never adopts its predecessor's.
func workloadName(pj *paddlev1.PaddleJob) string {
	sum := sha256.Sum256([]byte(pj.UID))
	return "paddlejob-" + pj.Name + "-" + hex.EncodeToString(sum[:])[:5]
}

// workloadNameOf is the name of the job's Workload: the one MultiKueue
// prebuilt for it, else its own.
func workloadNameOf(j job) string {
	if name := j.prebuiltWorkload(); name != "" {
		return name
	}
	return workloadName(j.PaddleJob)
}

func ownedBy(wl *workload, pj *paddlev1.PaddleJob) bool {
	ref := metav1.GetControllerOf(&wl.ObjectMeta)
	return ref != nil && ref.UID == pj.UID
}

// jobWorkload is the job's Workload, decoded and as read, or nils when it
// has none. A Workload of the job's name that another object controls is
// an error: it is never taken over.
func (r *Reconciler) jobWorkload(ctx context.Context, j job) (*workload, *unstructured.Unstructured, error) {
	return readWorkload(ctx, r.Client, j)
}

func readWorkload(ctx context.Context, c client.Reader, j job) (*workload, *unstructured.Unstructured, error) {
	raw := newUnstructured(WorkloadGVK)
	if err := c.Get(ctx, types.NamespacedName{Namespace: j.Namespace, Name: workloadNameOf(j)}, raw); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if ref := metav1.GetControllerOf(raw); ref != nil && ref.UID != j.UID {
		return nil, nil, fmt.Errorf("Workload %s/%s exists and is not the job's", raw.GetNamespace(), raw.GetName())
	}
	wl := &workload{}
	if err := fromUnstructured(raw, wl); err != nil {
		return nil, nil, fmt.Errorf("decoding Workload %s/%s: %w", raw.GetNamespace(), raw.GetName(), err)
	}
	return wl, raw, nil
}

func (r *Reconciler) createWorkload(ctx context.Context, j job) error {
	wl := &workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:            workloadName(j.PaddleJob),
			Namespace:       j.Namespace,
			Labels:          map[string]string{paddlev1.LabelJobName: j.Name, kueueJobUIDLabel: string(j.UID)},
			Finalizers:      []string{kueueResourceInUseFinalizer},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j.PaddleJob, paddlev1.GroupVersion.WithKind("PaddleJob"))},
		},
		Spec: kueueapi.WorkloadSpec{PodSets: j.PodSets(), QueueName: kueueapi.LocalQueueName(j.KueueQueueName())},
	}
	ref, priority, err := r.jobPriority(ctx, j)
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
		return fmt.Errorf("creating Workload %s/%s: %w", j.Namespace, wl.Name, err)
	}
	r.eventf(j.PaddleJob, corev1.EventTypeNormal, "CreatedWorkload", "Queue", "created Workload %s in Kueue LocalQueue %s", wl.Name, wl.Spec.QueueName)
	return nil
}

// adoptWorkload makes the job the controller of the Workload MultiKueue
// created for it in this (worker) cluster, as Kueue's own integrations do:
// the Workload then goes with the job, and Kueue finds the job from it.
func (r *Reconciler) adoptWorkload(ctx context.Context, j job, raw *unstructured.Unstructured) error {
	err := r.patchWorkload(ctx, raw, func(u *unstructured.Unstructured) error {
		refs := append(u.GetOwnerReferences(), *metav1.NewControllerRef(j.PaddleJob, paddlev1.GroupVersion.WithKind("PaddleJob")))
		u.SetOwnerReferences(refs)
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[kueueJobUIDLabel] = string(j.UID)
		labels[paddlev1.LabelJobName] = j.Name
		u.SetLabels(labels)
		return nil
	})
	if err == nil {
		r.eventf(j.PaddleJob, corev1.EventTypeNormal, "AdoptedWorkload", "Queue", "runs on Workload %s, which MultiKueue created", raw.GetName())
	}
	return err
}

// jobPriority is the job's priority as Kueue reads it: the
// WorkloadPriorityClass its label names, else the PriorityClass its first
// template names, else none (Kueue's default).
func (r *Reconciler) jobPriority(ctx context.Context, j job) (*priorityClassRef, *int32, error) {
	if name := j.Labels[paddlev1.KueuePriorityClassLabel]; name != "" {
		return r.workloadPriorityClass(ctx, name)
	}
	for _, ps := range j.PodSets() {
		if name := ps.Template.Spec.PriorityClassName; name != "" {
			pc := &schedulingv1.PriorityClass{}
			if err := r.Get(ctx, types.NamespacedName{Name: name}, pc); err != nil {
				return nil, nil, fmt.Errorf("the PriorityClass of spec.%s.template: %w", ps.Name, err)
			}
			return kueueapi.NewPodPriorityClassRef(name), ptr.To(pc.Value), nil
		}
	}
	return nil, nil, nil
}

func (r *Reconciler) workloadPriorityClass(ctx context.Context, name string) (*priorityClassRef, *int32, error) {
	wpc := newUnstructured(WorkloadPriorityClassGVK)
	if err := r.Get(ctx, types.NamespacedName{Name: name}, wpc); err != nil {
		return nil, nil, fmt.Errorf("the WorkloadPriorityClass of label %s: %w", paddlev1.KueuePriorityClassLabel, err)
	}
	value, _, err := unstructured.NestedInt64(wpc.Object, "value")
	if err != nil {
		return nil, nil, fmt.Errorf("WorkloadPriorityClass %s: %w", name, err)
	}
	return kueueapi.NewWorkloadPriorityClassRef(name), ptr.To(int32(value)), nil
}

// updatePriority gives the Workload the WorkloadPriorityClass the job's
// label now names, and its value: Kueue orders and preempts by it.
func (r *Reconciler) updatePriority(ctx context.Context, j job, raw *unstructured.Unstructured) error {
	name := j.Labels[paddlev1.KueuePriorityClassLabel]
	ref, value, err := r.workloadPriorityClass(ctx, name)
	if err != nil {
		return err
	}
	err = r.patchWorkload(ctx, raw, func(u *unstructured.Unstructured) error {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ref)
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedMap(u.Object, m, "spec", "priorityClassRef"); err != nil {
			return err
		}
		return unstructured.SetNestedField(u.Object, int64(*value), "spec", "priority")
	})
	if err == nil {
		r.eventf(j.PaddleJob, corev1.EventTypeNormal, "UpdatedWorkload", "Prioritize", "Workload %s now has WorkloadPriorityClass %s (%d)", raw.GetName(), name, *value)
	}
	return err
}

// admittedPodSets is what the admission gives each pod set: its count, its
// flavors' node labels and tolerations, Kueue's pod-set label, and what
// admission checks add.
func (r *Reconciler) admittedPodSets(ctx context.Context, wl *workload) ([]podSetInfo, error) {
	if wl.Status.Admission == nil {
		return nil, nil
	}
	var out []podSetInfo
	for _, a := range wl.Status.Admission.PodSetAssignments {
		info := podSetInfo{Count: ptr.Deref(a.Count, podSetCount(wl, a.Name)),
			podSetUpdate: podSetUpdate{Name: a.Name, Labels: map[string]string{kueuePodSetLabel: string(a.Name)}, NodeSelector: map[string]string{}}}
		for _, flavor := range slices.Sorted(maps.Values(a.Flavors)) {
			spec, err := r.resourceFlavor(ctx, string(flavor))
			if err != nil {
				return nil, err
			}
			maps.Copy(info.NodeSelector, spec.NodeLabels)
			info.Tolerations = appendMissing(info.Tolerations, spec.Tolerations...)
		}
		for _, check := range wl.Status.AdmissionChecks {
			for _, cu := range check.PodSetUpdates {
				if cu.Name == a.Name {
					mergeUpdate(&info.podSetUpdate, cu)
				}
			}
		}
		out = append(out, info)
	}
	return out, nil
}

func mergeUpdate(u *podSetUpdate, add podSetUpdate) {
	maps.Copy(u.Labels, add.Labels)
	if u.Annotations == nil && len(add.Annotations) > 0 {
		u.Annotations = map[string]string{}
	}
	maps.Copy(u.Annotations, add.Annotations)
	maps.Copy(u.NodeSelector, add.NodeSelector)
	u.Tolerations = appendMissing(u.Tolerations, add.Tolerations...)
}

func (r *Reconciler) resourceFlavor(ctx context.Context, name string) (resourceFlavorSpec, error) {
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

// patchWorkload writes the Workload as change leaves it, failing on a
// concurrent write so the next pass decides from the newer Workload.
func (r *Reconciler) patchWorkload(ctx context.Context, raw *unstructured.Unstructured, change func(*unstructured.Unstructured) error) error {
	patched := raw.DeepCopy()
	if err := change(patched); err != nil {
		return err
	}
	return ignoreGone(r.Patch(ctx, patched, client.MergeFromWithOptions(raw, client.MergeFromWithOptimisticLock{})))
}

// finishWorkload marks the Workload Finished: Kueue releases its quota.
func (r *Reconciler) finishWorkload(ctx context.Context, raw *unstructured.Unstructured, wl *workload, reason, msg string, now metav1.Time) error {
	return r.patchWorkloadStatus(ctx, raw, wl, func(st *workloadStatus) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: workloadFinished, Status: metav1.ConditionTrue,
			Reason: reason, Message: truncate.String(msg, 32*1024), ObservedGeneration: wl.Generation, LastTransitionTime: now})
	})
}

// patchWorkloadStatus writes the Workload's status as change leaves it,
// failing on a concurrent write (Kueue's) so that the next pass decides
// again from the newer Workload.
func (r *Reconciler) patchWorkloadStatus(ctx context.Context, raw *unstructured.Unstructured, wl *workload, change func(*workloadStatus)) error {
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
