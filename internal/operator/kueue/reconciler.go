// Package kueue queues PaddleJobs through Kueue, which knows them as an
// external framework (its configuration lists
// PaddleJob.v1.batch.paddlepaddle.org under integrations.externalFrameworks).
//
// Its controller runs Kueue's jobframework protocol beside the PaddleJob
// controller, over the job seen as Kueue's GenericJob (job.go): it keeps one
// Workload per queued job (a pod set per role), resumes the job with what the
// admission assigns its pods, on eviction suspends it and restores its
// templates, gives the quota back once its pods are gone, and finishes the
// Workload of a finished job. It changes a job only through spec.suspend and
// the roles' templates and replica counts; the PaddleJob controller runs or
// stops the pods as spec.suspend says, and asks this package (Queue) why a
// suspended job waits. docs/kueue.md says why this is written against
// Kueue's API and not its jobframework library.
package kueue

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/truncate"
)

// +kubebuilder:rbac:groups=batch.paddlepaddle.org,resources=paddlejobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;workloadpriorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// Reconciler is the Kueue controller of PaddleJobs.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
}

// NewReconciler returns a Kueue controller on the real clock.
func NewReconciler(c client.Client, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{Client: c, Recorder: recorder, Clock: clock.RealClock{}}
}

// queued reports whether Kueue queues the job: it names a LocalQueue, or
// runs on a Workload MultiKueue prebuilt for it.
func queued(j *paddlev1.PaddleJob) bool {
	return j.KueueQueueName() != "" || job{j}.prebuiltWorkload() != ""
}

// Reconcile takes the protocol's step for one job. Every write it makes
// brings the job back through its own event; a conflict is returned, and
// the retried pass decides again from the newer objects.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pj := &paddlev1.PaddleJob{}
	if err := r.Get(ctx, req.NamespacedName, pj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pj.DeletionTimestamp != nil || !queued(pj) {
		return reconcile.Result{}, nil
	}
	v := view{job: job{pj}}
	wl, raw, err := r.jobWorkload(ctx, v.job)
	if err != nil {
		return reconcile.Result{}, err
	}
	v.wl, v.owned = wl, wl != nil && ownedBy(wl, pj)
	if !v.job.managedElsewhere() {
		if v.pods, err = r.jobPods(ctx, pj); err != nil {
			return reconcile.Result{}, err
		}
	}
	s := decide(v)
	if s != stepNone {
		log.FromContext(ctx).V(1).Info("kueue", "step", s.String(), "workload", workloadNameOf(v.job))
	}
	return reconcile.Result{}, r.act(ctx, s, v, raw)
}

// act takes step s; raw is the Workload as read.
func (r *Reconciler) act(ctx context.Context, s step, v view, raw *unstructured.Unstructured) error {
	now := metav1.NewTime(r.Clock.Now())
	switch s {
	case stepCreate:
		return r.createWorkload(ctx, v.job)
	case stepAdopt:
		return r.adoptWorkload(ctx, v.job, raw)
	case stepOutOfSync:
		return r.finishWorkload(ctx, raw, v.wl, workloadOutOfSync, "The prebuilt workload is out of sync with its user job", now)
	case stepRecreate:
		return ignoreGone(r.Delete(ctx, raw, client.Preconditions{UID: &v.wl.UID}))
	case stepUpdateQueue:
		return r.patchWorkload(ctx, raw, func(u *unstructured.Unstructured) error {
			return unstructured.SetNestedField(u.Object, v.job.KueueQueueName(), "spec", "queueName")
		})
	case stepUpdatePriority:
		return r.updatePriority(ctx, v.job, raw)
	case stepStart:
		return r.start(ctx, v.job, v.wl)
	case stepRefuse:
		why := refusedAdmission(v.job, v.wl)
		r.eventf(v.job.PaddleJob, corev1.EventTypeWarning, "AdmissionRefused", "Start", "%s: Workload %s finished without running the job", why, v.wl.Name)
		return r.finishWorkload(ctx, raw, v.wl, workloadFailedToStart, why, now)
	case stepStop:
		return r.stop(ctx, v.job, v.wl)
	case stepRelease:
		return r.patchWorkloadStatus(ctx, raw, v.wl, func(st *workloadStatus) {
			releaseQuota(st, findCondition(v.wl, workloadEvicted), v.wl.Generation, now)
		})
	case stepFinish:
		msg, success, _ := v.job.Finished()
		reason := workloadSucceeded
		if !success {
			reason = workloadFailed
		}
		return r.finishWorkload(ctx, raw, v.wl, reason, msg, now)
	case stepDropFinalizer:
		return r.patchWorkload(ctx, raw, func(u *unstructured.Unstructured) error {
			controllerutil.RemoveFinalizer(u, kueueResourceInUseFinalizer)
			return nil
		})
	case stepPodsReady:
		c := podsReadyCondition(v)
		c.ObservedGeneration, c.LastTransitionTime = v.wl.Generation, now
		return r.patchWorkloadStatus(ctx, raw, v.wl, func(st *workloadStatus) { meta.SetStatusCondition(&st.Conditions, c) })
	}
	return nil
}

// start resumes an admitted job, its templates given what Kueue assigned
// each pod set.
func (r *Reconciler) start(ctx context.Context, j job, wl *workload) error {
	infos, err := r.admittedPodSets(ctx, wl)
	if err != nil {
		return err
	}
	started := job{j.DeepCopy()}
	if err := started.RunWithPodSetsInfo(infos); err != nil {
		return err // refusedAdmission checked the counts: a pod set the job has not
	}
	if err := r.Patch(ctx, started.PaddleJob, client.MergeFromWithOptions(j.PaddleJob, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreGone(err)
	}
	r.eventf(j.PaddleJob, corev1.EventTypeNormal, "Started", "Start", "admitted by Kueue ClusterQueue %s", wl.Status.Admission.ClusterQueue)
	return nil
}

// stop suspends a job Kueue has not admitted (or evicted) and gives its
// roles back what they had when queued.
func (r *Reconciler) stop(ctx context.Context, j job, wl *workload) error {
	stopped := job{j.DeepCopy()}
	stopped.Suspend()
	why := "queued in Kueue LocalQueue " + j.KueueQueueName() + " before it runs"
	if wl != nil {
		stopped.RestorePodSetsInfo(wl.Spec.PodSets)
		switch ev := findCondition(wl, workloadEvicted); {
		case ev.Status == metav1.ConditionTrue:
			why = fmt.Sprintf("evicted by Kueue (%s: %s)", ev.Reason, ev.Message)
		case wl.DeletionTimestamp != nil:
			why = "its Workload " + wl.Name + " is being deleted"
		default:
			why = "its Workload " + wl.Name + " is not admitted"
		}
	}
	if err := r.Patch(ctx, stopped.PaddleJob, client.MergeFromWithOptions(j.PaddleJob, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreGone(err)
	}
	r.eventf(j.PaddleJob, corev1.EventTypeNormal, "Stopped", "Suspend", "suspended: %s", why)
	return nil
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

// jobPods are the pods the job controls, from the cache.
func (r *Reconciler) jobPods(ctx context.Context, pj *paddlev1.PaddleJob) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(pj.Namespace), client.MatchingLabels{paddlev1.LabelJobName: pj.Name}); err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == pj.UID {
			pods = append(pods, &list.Items[i])
		}
	}
	return pods, nil
}

// eventf records an event on the job with its note cut to what the API
// server stores.
func (r *Reconciler) eventf(pj *paddlev1.PaddleJob, eventtype, reason, action, note string, args ...any) {
	r.Recorder.Eventf(pj, nil, eventtype, reason, action, "%s", truncate.String(fmt.Sprintf(note, args...), maxEventNote))
}

// maxEventNote is the longest event note the API server stores.
const maxEventNote = 1024

// ignoreGone ignores writes to an object deleted meanwhile; conflicts are
// returned, so the pass is retried from the newer object.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
