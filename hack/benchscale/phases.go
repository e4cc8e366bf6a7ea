package main

// After a many-jobs scenario's jobs all run: a whole-job restart of many of
// them at once (one pod of each killed, as a lost node or a preemption wave
// would), then many of them completing at once. Each phase is timed from
// the harness's first status write to the last job reporting the outcome,
// with the operator's CPU, peak memory and requests over it.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
)

// Phase names.
const (
	phaseRestart  = "restart"
	phaseComplete = "complete"
)

// killedExitCode is the exit code of a container killed by SIGKILL: a
// retryable one under restartPolicy ExitCode.
const killedExitCode = 137

// phaseResult is one phase of a run.
type phaseResult struct {
	Name string
	// Jobs is how many jobs the phase touched, Pods how many pods the
	// harness wrote (restart: one per job; complete: all of theirs).
	Jobs, Pods int
	// Marked is from the first status write to the last one's response.
	Marked time.Duration
	// NewPods is from the first status write to the last replacement pod
	// seen (restart only).
	NewPods time.Duration
	// Done is from the first status write to the last job Running again
	// after its restart, or Completed.
	Done time.Duration
	// ReplacementPods is how many pods the restart recreated.
	ReplacementPods int
	Ops             requestCounts
	OpsKnown        bool
	CPU             time.Duration
	PeakRSS         uint64
}

// phaseTracker follows the jobs of one phase through the observer's events.
type phaseTracker struct {
	mu sync.Mutex
	// jobs are the phase's jobs; done notes those that reached the outcome.
	jobs map[string]bool
	done map[string]bool
	// old are the jobs' pods before the phase, by UID; fresh the pods
	// created since (restart).
	old, fresh map[types.UID]bool
	wantFresh  int
	outcome    func(job *unstructured.Unstructured) bool

	freshAt, doneAt time.Time
	allFresh        chan struct{}
	allDone         chan struct{}
}

func newPhaseTracker(jobs []string, old []*corev1.Pod, wantFresh int, outcome func(*unstructured.Unstructured) bool) *phaseTracker {
	pt := &phaseTracker{
		jobs: map[string]bool{}, done: map[string]bool{},
		old: map[types.UID]bool{}, fresh: map[types.UID]bool{}, wantFresh: wantFresh, outcome: outcome,
		allFresh: make(chan struct{}), allDone: make(chan struct{}),
	}
	for _, j := range jobs {
		pt.jobs[j] = true
	}
	for _, p := range old {
		pt.old[p.UID] = true
	}
	if wantFresh == 0 {
		close(pt.allFresh)
	}
	return pt
}

func (pt *phaseTracker) pod(p *corev1.Pod, at time.Time) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if !pt.jobs[p.Labels[paddlev1.LabelJobName]] || pt.old[p.UID] || pt.fresh[p.UID] || len(pt.fresh) == pt.wantFresh {
		return
	}
	pt.fresh[p.UID] = true
	if len(pt.fresh) == pt.wantFresh {
		pt.freshAt = at
		close(pt.allFresh)
	}
}

func (pt *phaseTracker) job(u *unstructured.Unstructured, at time.Time) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	name := u.GetName()
	if !pt.jobs[name] || pt.done[name] {
		return
	}
	if !pt.outcome(u) {
		return
	}
	pt.done[name] = true
	if len(pt.done) == len(pt.jobs) {
		pt.doneAt = at
		close(pt.allDone)
	}
}

// missing says how far the phase got, for a timeout's message.
func (pt *phaseTracker) missing() string {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return fmt.Sprintf("%d of %d replacement pods seen, %d of %d jobs done", len(pt.fresh), pt.wantFresh, len(pt.done), len(pt.jobs))
}

// restarted is the restart phase's outcome: Running again after a counted
// restart, which the Restarting condition says (False, Restarted) once every
// pod runs again. Read from the job as it is, not from the phases it went
// through: a watch that relists skips those.
func restarted(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	count, _, _ := unstructured.NestedInt64(u.Object, "status", "restartCount")
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == paddlev1.JobRestarting {
			return phase == string(paddlev1.PaddleJobRunning) && count >= 1 &&
				m["status"] == string(metav1.ConditionFalse) && m["reason"] == controller.ReasonRestarted
		}
	}
	return false
}

// completed is the complete phase's outcome.
func completed(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase == string(paddlev1.PaddleJobCompleted)
}

// phaseJobs splits a scenario's jobs (sorted by name) between the phases:
// the first restart jobs restart, the last complete jobs complete; they
// overlap only when the scenario has fewer jobs than both together.
func phaseJobs(names []string, restart, complete int) (restarting, completing []string) {
	sort.Strings(names)
	restart, complete = min(restart, len(names)), min(complete, len(names))
	return names[:restart], names[len(names)-complete:]
}

// runPhases runs the restart and the complete phases on a scenario's jobs,
// all Running, in namespace ns.
func (h *harness) runPhases(ctx context.Context, ns string, s scenario, t *tracker, timeout time.Duration) ([]phaseResult, error) {
	byJob := map[string][]*corev1.Pod{}
	for _, p := range h.obs.podsOf(ns) {
		byJob[p.Labels[paddlev1.LabelJobName]] = append(byJob[p.Labels[paddlev1.LabelJobName]], p)
	}
	names := make([]string, 0, len(byJob))
	for name := range byJob {
		names = append(names, name)
	}
	restarting, completing := phaseJobs(names, h.cfg.restartJobs, h.cfg.completeJobs)
	var out []phaseResult
	if len(restarting) > 0 {
		var kill, old []*corev1.Pod
		for _, name := range restarting {
			pods := byJob[name]
			sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
			kill = append(kill, pods[0])
			old = append(old, pods...)
		}
		pt := newPhaseTracker(restarting, old, len(restarting)*s.podsPerJob(), restarted)
		res, err := h.runPhase(ctx, t, pt, phaseRestart, len(restarting), kill, failedStatusPatch, timeout)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	if len(completing) > 0 {
		// The pods as they are now: the restart may have replaced some.
		current := map[string][]*corev1.Pod{}
		for _, p := range h.obs.podsOf(ns) {
			current[p.Labels[paddlev1.LabelJobName]] = append(current[p.Labels[paddlev1.LabelJobName]], p)
		}
		var finish []*corev1.Pod
		for _, name := range completing {
			finish = append(finish, current[name]...)
		}
		pt := newPhaseTracker(completing, nil, 0, completed)
		res, err := h.runPhase(ctx, t, pt, phaseComplete, len(completing), finish, succeededStatusPatch, timeout)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// runPhase writes patch to the status of every pod of pods, --client-inflight
// at a time, and waits for pt's jobs to reach their outcome.
func (h *harness) runPhase(ctx context.Context, t *tracker, pt *phaseTracker, name string, jobs int, pods []*corev1.Pod,
	patch func(*corev1.Pod, time.Time) ([]byte, error), timeout time.Duration) (phaseResult, error) {
	res := phaseResult{Name: name, Jobs: jobs, Pods: len(pods)}
	h.waitOperatorQuiet(ctx)
	before, err := h.snapshot(ctx, true)
	if err != nil {
		return res, err
	}
	t.setPhase(pt)
	defer t.setPhase(nil)
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err = h.parallel(sctx, len(pods), func(i int) error {
		p := pods[i]
		body, err := patch(p, time.Now())
		if err != nil {
			return err
		}
		_, err = h.c.creator.CoreV1().Pods(p.Namespace).Patch(sctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: writing the status of pod %s/%s: %w", name, p.Namespace, p.Name, err)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Marked = time.Since(start)
	for _, w := range []struct {
		done <-chan struct{}
		what string
	}{{pt.allFresh, "the replacement pods"}, {pt.allDone, "the jobs' outcome"}} {
		if err := h.await(sctx, w.done); err != nil {
			return res, fmt.Errorf("%s phase: waiting for %s after %s: %w; %s", name, w.what, time.Since(start).Round(time.Millisecond), err, pt.missing())
		}
	}
	pt.mu.Lock()
	if pt.wantFresh > 0 {
		res.NewPods, res.ReplacementPods = pt.freshAt.Sub(start), len(pt.fresh)
	}
	res.Done = pt.doneAt.Sub(start)
	pt.mu.Unlock()
	h.waitOperatorQuiet(ctx)
	after, err := h.snapshot(ctx, false)
	if err != nil {
		return res, err
	}
	if before.api != nil && after.api != nil {
		res.Ops, res.OpsKnown = h.operatorRequests(before, after), true
	}
	res.CPU, res.PeakRSS = after.usage.CPU-before.usage.CPU, after.usage.PeakRSS
	return res, nil
}

// failedStatusPatch is a kubelet's status of a pod whose container was
// killed: phase Failed, exit code 137.
func failedStatusPatch(p *corev1.Pod, now time.Time) ([]byte, error) {
	return terminatedStatusPatch(p, now, corev1.PodFailed, killedExitCode, "Error")
}

// succeededStatusPatch is a kubelet's status of a pod whose containers all
// exited 0.
func succeededStatusPatch(p *corev1.Pod, now time.Time) ([]byte, error) {
	return terminatedStatusPatch(p, now, corev1.PodSucceeded, 0, "Completed")
}

func terminatedStatusPatch(p *corev1.Pod, now time.Time, phase corev1.PodPhase, code int32, reason string) ([]byte, error) {
	t := metav1.NewTime(now.Truncate(time.Second))
	st := corev1.PodStatus{Phase: phase}
	for _, c := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: t})
	}
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: t}},
		})
	}
	return json.Marshal(map[string]any{"status": st})
}
