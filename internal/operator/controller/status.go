package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/transition"
	"github.com/paddlejob/paddlejob/internal/truncate"
)

// Condition reasons.
const (
	ReasonPodsCreated        = "PodsCreated"
	ReasonCreatingPods       = "CreatingPods"
	ReasonAllPodsRunning     = "AllPodsRunning"
	ReasonWaitingForPods     = "WaitingForPods"
	ReasonWaitingForPodIPs   = "WaitingForPodIPs"
	ReasonWaitingForServers  = "WaitingForServers"
	ReasonWaitingForPodGroup = "WaitingForPodGroup"
	ReasonPodGroupAdmitted   = "PodGroupAdmitted"
	ReasonRestartBackoff     = "RestartBackoff"
	ReasonSettlingFailures   = "SettlingFailures"
	ReasonPodFailed          = "PodFailed"
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonWorkersSucceeded   = "AllWorkersSucceeded"
	ReasonJobFinished        = "JobFinished"
	ReasonSuspended          = "Suspended"
	ReasonResumed            = "Resumed"
)

// maxListed caps the pod names a condition message lists.
const maxListed = 5

// observed is what a reconcile pass saw and decided, for the status.
type observed struct {
	// pods are the job's pods with index < replicas of their role, not being
	// deleted, in role and index order.
	pods []*corev1.Pod
	// podUIDs are the UIDs of every pod of the job the cache shows.
	podUIDs map[string]bool
	// missingHosts names the pods whose address is not known yet, in PodIP and
	// Host intranet.
	missingHosts []string
	// waitingForServers names the server pods that are not Ready while
	// pods that connect to them wait (startorder.go).
	waitingForServers []string
	// invalid, when set, is why the job cannot run (what the schema cannot
	// check).
	invalid string
	// fatal, when set, fails the job (a pod failure the policies do not
	// restart, the backoff limit, the deadline).
	fatal *metav1.Condition
	// gang names the gang scheduler of the job ("" for none) and
	// podGroupWaiting, while it has not admitted the job, what it waits for.
	gang, podGroupWaiting string
	// backoff is how long the job waits before recreating a failed pod.
	backoff time.Duration
	// stopping names the pods of a restart that have not stopped yet: no
	// pod is created before they are gone.
	stopping []string
	// created counts the pods this pass created.
	created int
	// specChanged, when set, says what changed since the live pods were
	// made: no pod is created (specchange.go).
	specChanged string
	// settling, when set, says which failures wait for the pods failing
	// with them before they are judged (failuresettle.go).
	settling string
}

// nextStatus computes the job's status from what was observed. It is pure:
// the same job, observation and time give the same status. Terminal phases
// are kept.
func nextStatus(job *paddlev1.PaddleJob, obs observed, now metav1.Time) paddlev1.PaddleJobStatus {
	st := *job.Status.DeepCopy()
	st.ObservedGeneration = job.Generation
	st.Mode = job.Spec.Mode()
	if st.IsFinished() {
		return st
	}
	if obs.invalid != "" {
		return finish(st, job, paddlev1.PaddleJobFailed, now, metav1.Condition{
			Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonInvalidSpec, Message: obs.invalid,
		})
	}
	markResumed(&st, now)
	st.RecreatingPods = keepPresent(st.RecreatingPods, obs.podUIDs)
	st.HostPorts = keepDesiredPorts(job, st.HostPorts)

	setReplicaStatuses(&st, job, obs.pods)
	if st.StartTime == nil {
		// The job starts when first seen active, pods or not: a job whose
		// pods cannot be created still meets its activeDeadlineSeconds.
		st.StartTime = &now
	}
	if obs.fatal != nil {
		return finish(st, job, paddlev1.PaddleJobFailed, now, *obs.fatal)
	}
	workers := st.Worker
	if n := job.Spec.ReplicaCount(paddlev1.ReplicaWorker); n > 0 && workers != nil && int(workers.Succeeded) == n {
		return finish(st, job, paddlev1.PaddleJobCompleted, now, metav1.Condition{
			Type: paddlev1.JobSucceeded, Status: metav1.ConditionTrue, Reason: ReasonWorkersSucceeded,
			Message: fmt.Sprintf("all %d workers succeeded", n),
		})
	}

	setPodGroupCondition(&st, obs.gang, obs.podGroupWaiting, now)
	setCreatedCondition(&st, job, obs, now)
	setRunningCondition(&st, job, obs, now)
	return st
}

// setReplicaStatuses counts the observed pods of each replica type into
// st; a type the job does not have gets no status.
func setReplicaStatuses(st *paddlev1.PaddleJobStatus, job *paddlev1.PaddleJob, pods []*corev1.Pod) {
	byRole := map[paddlev1.ReplicaType][]*corev1.Pod{}
	for _, p := range pods {
		rt, _, _ := podIndex(p)
		byRole[rt] = append(byRole[rt], p)
	}
	for _, rt := range paddlev1.ReplicaTypes {
		if job.Spec.Replicas(rt) == nil {
			st.SetReplicaStatus(rt, nil)
			continue
		}
		st.SetReplicaStatus(rt, countPods(byRole[rt], job.Spec.ReplicaCount(rt)))
	}
}

// setCreatedCondition sets the Created condition and the phase from how
// many of the job's pods exist: Pending while some are missing, saying why
// none is being created when a spec change or the gang scheduler holds
// them, Starting once all exist.
func setCreatedCondition(st *paddlev1.PaddleJobStatus, job *paddlev1.PaddleJob, obs observed, now metav1.Time) {
	desired := job.Spec.TotalReplicas()
	if len(obs.pods) < desired {
		st.Phase = paddlev1.PaddleJobPending
		reason, msg := ReasonCreatingPods, fmt.Sprintf("%d of %d pods exist", len(obs.pods), desired)
		switch {
		case obs.specChanged != "":
			reason, msg = ReasonSpecChanged, msg+"; "+obs.specChanged
		case obs.podGroupWaiting != "":
			reason, msg = ReasonWaitingForPodGroup, msg+"; "+obs.podGroupWaiting
		}
		setCondition(st, now, paddlev1.JobCreated, metav1.ConditionFalse, reason, msg)
	} else {
		setCondition(st, now, paddlev1.JobCreated, metav1.ConditionTrue, ReasonPodsCreated,
			fmt.Sprintf("all %d pods exist", desired))
		st.Phase = paddlev1.PaddleJobStarting
	}
}

// setRunningCondition sets the Running condition: true, with the phase
// Running, once every pod exists and runs; otherwise false, with what the
// job waits for, first the pods of a restart that must stop, then the
// restart backoff, pods the scheduler cannot place or the kubelet cannot
// start (the phase is then Pending: pending.go), the pods' addresses, the
// servers, and last the pods not running yet.
func setRunningCondition(st *paddlev1.PaddleJobStatus, job *paddlev1.PaddleJob, obs observed, now metav1.Time) {
	desired := job.Spec.TotalReplicas()
	notRunning := podsNotRunning(obs.pods)
	waiting, why := podsWaiting(obs.pods)
	switch {
	case len(obs.pods) == desired && len(notRunning) == 0:
		st.Phase = paddlev1.PaddleJobRunning
		setCondition(st, now, paddlev1.JobRunning, metav1.ConditionTrue, ReasonAllPodsRunning,
			fmt.Sprintf("all %d pods are running", desired))
		markRestarted(st, now)
	case len(obs.stopping) > 0:
		setCondition(st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonStoppingPods,
			"restarting: waiting for "+listNames(obs.stopping)+" to stop")
	case obs.settling != "":
		setCondition(st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonSettlingFailures, obs.settling)
	case obs.backoff > 0:
		setCondition(st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonRestartBackoff,
			fmt.Sprintf("recreating failed pods after a %s backoff (restart %d of at most %d)",
				obs.backoff.Round(time.Second), st.RestartCount, ptr.Deref(job.Spec.BackoffLimit, paddlev1.DefaultBackoffLimit)))
	case waiting != "":
		st.Phase = paddlev1.PaddleJobPending
		setCondition(st, now, paddlev1.JobRunning, metav1.ConditionFalse, waiting, why)
	case len(obs.missingHosts) > 0:
		setCondition(st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonWaitingForPodIPs,
			"training starts once every pod has an IP; waiting for "+listNames(obs.missingHosts))
	case len(obs.waitingForServers) > 0:
		setCondition(st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonWaitingForServers,
			"trainers start once every server accepts connections; waiting for "+listNames(obs.waitingForServers)+" to be Ready")
	default:
		msg := "waiting for pods to be created"
		if len(notRunning) > 0 {
			msg = "waiting for " + listNames(notRunning)
		}
		setCondition(st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonWaitingForPods, msg)
	}
}

// finish moves the status to a terminal phase with its condition.
func finish(st paddlev1.PaddleJobStatus, job *paddlev1.PaddleJob, phase paddlev1.PaddleJobPhase, now metav1.Time, c metav1.Condition) paddlev1.PaddleJobStatus {
	st.Phase = phase
	st.CompletionTime = &now
	stopLivePods(&st, job)
	setCondition(&st, now, c.Type, c.Status, c.Reason, c.Message)
	setCondition(&st, now, paddlev1.JobRunning, metav1.ConditionFalse, ReasonJobFinished, "the job "+strings.ToLower(string(phase)))
	if st.IsConditionTrue(paddlev1.JobRestarting) {
		setCondition(&st, now, paddlev1.JobRestarting, metav1.ConditionFalse, ReasonJobFinished, "the job "+strings.ToLower(string(phase))+" while restarting")
	}
	return st
}

// stopLivePods counts the pods a finishing job still runs as stopped: the
// pass that sees it finished deletes them (cleanup.go), so a finished job
// never reports a role running.
func stopLivePods(st *paddlev1.PaddleJobStatus, job *paddlev1.PaddleJob) {
	for _, rt := range paddlev1.ReplicaTypes {
		rs := st.ReplicaStatus(rt)
		if rs == nil {
			continue
		}
		rs.Stopped += rs.Pending + rs.Starting + rs.Running + rs.Unknown
		rs.Pending, rs.Starting, rs.Running, rs.Unknown = 0, 0, 0, 0
		rs.Ready = fmt.Sprintf("0/%d", job.Spec.ReplicaCount(rt))
	}
}

func setCondition(st *paddlev1.PaddleJobStatus, now metav1.Time, t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: truncate.String(msg, maxConditionMessage), ObservedGeneration: st.ObservedGeneration, LastTransitionTime: now,
	})
}

// countPods counts a role's pods by state.
func countPods(pods []*corev1.Pod, replicas int) *paddlev1.ReplicaStatus {
	rs := &paddlev1.ReplicaStatus{}
	for _, p := range pods {
		rs.Restarts += containerRestarts(p)
		switch p.Status.Phase {
		case corev1.PodPending, "":
			if p.Spec.NodeName == "" {
				rs.Pending++
			} else {
				rs.Starting++
			}
		case corev1.PodRunning:
			rs.Running++
		case corev1.PodSucceeded:
			rs.Succeeded++
		case corev1.PodFailed:
			rs.Failed++
		default:
			rs.Unknown++
		}
	}
	rs.Ready = fmt.Sprintf("%d/%d", rs.Running, replicas)
	return rs
}

// podsNotRunning names the pods that are neither running nor done.
func podsNotRunning(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
			out = append(out, p.Name)
		}
	}
	return out
}

func listNames(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
}

// Limits of the API server on the texts the operator writes.
const (
	// maxEventNote is the longest note of an events.k8s.io/v1 Event: a
	// longer one is refused, and the event lost.
	maxEventNote = 1024
	// maxConditionMessage is the CRD's maxLength of a condition message: a
	// longer one fails the whole status write.
	maxConditionMessage = 32768
)

// eventf records an event on obj with its note cut to what the API server
// stores.
func (r *PaddleJobReconciler) eventf(obj runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.Recorder.Eventf(obj, nil, eventtype, reason, action, "%s", truncate.String(fmt.Sprintf(note, args...), maxEventNote))
}

// statusChanged reports whether a status write is needed.
func statusChanged(old, updated *paddlev1.PaddleJobStatus) bool {
	return !equality.Semantic.DeepEqual(old, updated)
}

// keepPresent keeps the UIDs still among the job's pods.
func keepPresent(uids []string, present map[string]bool) []string {
	var out []string
	for _, u := range uids {
		if present[u] {
			out = append(out, u)
		}
	}
	return out
}

// writeStatus writes the status a pass computed, with the error of its
// actions (if any) on the Created condition, under the failed action's
// reason (failedAction). It returns the job as written. A conflict among
// the actions' errors (a write-ahead step met a newer job) writes nothing:
// the write would meet the same newer job.
func (r *PaddleJobReconciler) writeStatus(ctx context.Context, job *paddlev1.PaddleJob, status paddlev1.PaddleJobStatus, actErr error) (*paddlev1.PaddleJob, error) {
	if apierrors.IsConflict(actErr) {
		return nil, actErr
	}
	if actErr != nil && !status.IsFinished() {
		setCondition(&status, metav1.NewTime(r.Clock.Now()), paddlev1.JobCreated, metav1.ConditionFalse, actionReason(actErr), actErr.Error())
	}
	return r.updateStatus(ctx, job, status, "updating the status")
}

// updateStatus is the one place the job's status is written: by the end of
// a pass (writeStatus), and by the write-ahead steps that must be recorded
// before the pods they concern change — recordRestart (restart.go) and
// recordHostPorts (intranet.go). step names the write in errors. It returns
// the job as written (unchanged when status is the job's).
//
// A conflict (the job changed since the cache showed it) is returned like
// any error, the one policy of the whole reconciler: the pass stops, and
// controller-runtime requeues the job with a backoff, to be reconciled
// from the newer job.
func (r *PaddleJobReconciler) updateStatus(ctx context.Context, job *paddlev1.PaddleJob, status paddlev1.PaddleJobStatus, step string) (*paddlev1.PaddleJob, error) {
	if !statusChanged(&job.Status, &status) {
		return job, nil
	}
	updated := job.DeepCopy()
	updated.Status = status
	if err := r.Status().Update(ctx, updated); err != nil {
		return nil, fmt.Errorf("%s of PaddleJob %s/%s: %w", step, job.Namespace, job.Name, err)
	}
	r.recordTransition(job, updated)
	return updated, nil
}

// actionError is the failure of one of a pass's actions, with the reason
// the status reports it under (api/v1's Reason...Failed).
type actionError struct {
	reason string
	err    error
}

func (e *actionError) Error() string { return e.err.Error() }
func (e *actionError) Unwrap() error { return e.err }

// failedAction gives an action's error (nil: none) its reason.
func failedAction(reason string, err error) error {
	if err == nil {
		return nil
	}
	return &actionError{reason: reason, err: err}
}

// actionReason is the reason of the first failed action of err (joined
// errors in the order the pass met them); ReasonCreatingPods for an error
// no action claimed.
func actionReason(err error) string {
	var act *actionError
	if errors.As(err, &act) {
		return act.reason
	}
	return ReasonCreatingPods
}

// recordTransition emits an event for each condition whose status changed,
// since the status keeps only the latest transition of each and the events
// are the job's history (the dashboard's timeline, internal/transition);
// and one when the job reaches a terminal phase.
func (r *PaddleJobReconciler) recordTransition(old, updated *paddlev1.PaddleJob) {
	for _, c := range updated.Status.Conditions {
		if prev := findCondition(old, c.Type); prev.Type == c.Type && prev.Status == c.Status {
			continue
		}
		kind := corev1.EventTypeNormal
		if c.Status == metav1.ConditionTrue && (c.Type == paddlev1.JobFailed || c.Type == paddlev1.JobRestarting) {
			kind = corev1.EventTypeWarning
		}
		r.eventf(updated, kind, transition.Reason, transition.Action(c, updated.Generation, updated.Status.RestartCount),
			"%s", transition.Note(c, updated.Generation, updated.Status.RestartCount))
	}
	if old.Status.Phase == updated.Status.Phase {
		return
	}
	observeTransition(old, updated)
	switch updated.Status.Phase {
	case paddlev1.PaddleJobCompleted:
		c := findCondition(updated, paddlev1.JobSucceeded)
		r.eventf(updated, corev1.EventTypeNormal, "JobCompleted", "Complete", "%s", c.Message)
	case paddlev1.PaddleJobFailed:
		c := findCondition(updated, paddlev1.JobFailed)
		r.eventf(updated, corev1.EventTypeWarning, "JobFailed", "Fail", "%s: %s", c.Reason, c.Message)
	}
}

func findCondition(job *paddlev1.PaddleJob, t string) metav1.Condition {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}
