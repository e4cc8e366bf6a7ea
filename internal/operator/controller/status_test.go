package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// podsOf builds a job's pods from the spec and sets each one's state.
func podsOf(job *paddlev1.PaddleJob, states map[string]func(*testutil.PodWrapper) *testutil.PodWrapper) []*corev1.Pod {
	var out []*corev1.Pod
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			pod := newPod(job, rt, i, podcontract.DefaultPortRange(job.Spec.Replicas(rt)), podOptions{})
			state, ok := states[pod.Name]
			if !ok {
				continue // not created
			}
			out = append(out, state(testutil.WrapPod(pod)).Obj())
		}
	}
	return out
}

func running(ip string) func(*testutil.PodWrapper) *testutil.PodWrapper {
	return func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Scheduled("n").Running(ip) }
}
func unscheduled(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Pending("") }
func starting(w *testutil.PodWrapper) *testutil.PodWrapper    { return w.Scheduled("n").Pending("") }
func succeeded(w *testutil.PodWrapper) *testutil.PodWrapper   { return w.Scheduled("n").Succeeded() }
func failed(code int32) func(*testutil.PodWrapper) *testutil.PodWrapper {
	return func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Scheduled("n").Failed("paddle", code) }
}

// statusTime is the time nextStatus is given in its table tests.
var statusTime = metav1.NewTime(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))

// statusPSJob is the PS job (two pservers, two workers, generation 3) of
// nextStatus's table tests.
func statusPSJob() *paddlev1.PaddleJob {
	ps := testutil.MakePaddleJob("wd", "ns").PS(2).Workers(2).Obj()
	ps.Generation = 3
	return ps
}

// podStates sets the state of a job's pods by name (podsOf); a pod not
// named does not exist.
type podStates = map[string]func(*testutil.PodWrapper) *testutil.PodWrapper

// statusCondition is a condition nextStatus must set; msg is a substring
// of its message.
type statusCondition struct {
	status metav1.ConditionStatus
	reason string
	msg    string
}

// nextStatusCase is a job, what was observed of it, and the status
// nextStatus must compute.
type nextStatusCase struct {
	name       string
	job        *paddlev1.PaddleJob
	states     podStates
	missing    []string
	invalid    string
	wantPhase  paddlev1.PaddleJobPhase
	wantMode   paddlev1.PaddleJobMode
	wantConds  map[string]statusCondition
	wantWorker *paddlev1.ReplicaStatus
	wantPS     *paddlev1.ReplicaStatus
}

// check computes the status of tc's job and checks the phase, the mode, the
// observed generation, the conditions, the worker counts, and that the
// completion time is set exactly when the job finished and the start time
// exactly when the job is valid.
func (tc nextStatusCase) check(t *testing.T) {
	t.Helper()
	now := statusTime
	obs := observed{pods: podsOf(tc.job, tc.states), missingHosts: tc.missing, invalid: tc.invalid}
	obs.fatal = evaluateFailures(tc.job, obs.pods, now.Time, DefaultFailureSettleWindow).fatal
	st := nextStatus(tc.job, obs, now)
	if st.Phase != tc.wantPhase || st.Mode != tc.wantMode {
		t.Errorf("phase, mode = %s, %s; want %s, %s", st.Phase, st.Mode, tc.wantPhase, tc.wantMode)
	}
	if st.ObservedGeneration != tc.job.Generation {
		t.Errorf("observedGeneration = %d, want %d", st.ObservedGeneration, tc.job.Generation)
	}
	for typ, want := range tc.wantConds {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil {
			t.Errorf("condition %s missing; have %+v", typ, st.Conditions)
			continue
		}
		if c.Status != want.status || c.Reason != want.reason || !strings.Contains(c.Message, want.msg) {
			t.Errorf("condition %s = %s/%s %q; want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, want.status, want.reason, want.msg)
		}
	}
	if tc.wantWorker != nil && *st.Worker != *tc.wantWorker {
		t.Errorf("worker status = %+v, want %+v", *st.Worker, *tc.wantWorker)
	}
	if tc.wantPS != nil && *st.PS != *tc.wantPS {
		t.Errorf("ps status = %+v, want %+v", *st.PS, *tc.wantPS)
	}
	finished := tc.wantPhase == paddlev1.PaddleJobCompleted || tc.wantPhase == paddlev1.PaddleJobFailed
	if finished != (st.CompletionTime != nil) {
		t.Errorf("completionTime = %v for phase %s", st.CompletionTime, st.Phase)
	}
	// A valid job starts when first seen active, pods or not.
	if (obs.invalid == "") != (st.StartTime != nil) {
		t.Errorf("startTime = %v for a job invalid because %q", st.StartTime, obs.invalid)
	}
}

// runNextStatusCases runs each case as a subtest.
func runNextStatusCases(t *testing.T, cases []nextStatusCase) {
	for _, c := range cases {
		t.Run(c.name, c.check)
	}
}

// TestNextStatusWhilePodsStartAndRun: a job stays Pending until every pod
// exists, Starting until every pod runs, then Running; one worker done is
// not the end.
func TestNextStatusWhilePodsStartAndRun(t *testing.T) {
	ps := statusPSJob()
	runNextStatusCases(t, []nextStatusCase{{
		name:      "no pods yet",
		job:       ps,
		wantPhase: paddlev1.PaddleJobPending, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobCreated: {metav1.ConditionFalse, ReasonCreatingPods, "0 of 4 pods exist"},
			paddlev1.JobRunning: {metav1.ConditionFalse, ReasonWaitingForPods, "waiting for pods to be created"},
		},
	}, {
		name:      "some pods created",
		job:       ps,
		states:    podStates{"wd-ps-0": unscheduled, "wd-worker-0": unscheduled},
		wantPhase: paddlev1.PaddleJobPending, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{paddlev1.JobCreated: {metav1.ConditionFalse, ReasonCreatingPods, "2 of 4 pods exist"}},
	}, {
		name: "all created, waiting for pod IPs",
		job:  ps,
		states: podStates{
			"wd-ps-0": starting, "wd-ps-1": unscheduled, "wd-worker-0": starting, "wd-worker-1": starting,
		},
		missing:   []string{"wd-ps-1"},
		wantPhase: paddlev1.PaddleJobStarting, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobCreated: {metav1.ConditionTrue, ReasonPodsCreated, "all 4 pods exist"},
			paddlev1.JobRunning: {metav1.ConditionFalse, ReasonWaitingForPodIPs, "waiting for wd-ps-1"},
		},
		wantWorker: &paddlev1.ReplicaStatus{Starting: 2, Ready: "0/2"},
	}, {
		name: "all running",
		job:  ps,
		states: podStates{
			"wd-ps-0": running("1.1.1.1"), "wd-ps-1": running("1.1.1.2"), "wd-worker-0": running("1.1.1.3"), "wd-worker-1": running("1.1.1.4"),
		},
		wantPhase: paddlev1.PaddleJobRunning, wantMode: paddlev1.PaddleJobModePS,
		wantConds:  map[string]statusCondition{paddlev1.JobRunning: {metav1.ConditionTrue, ReasonAllPodsRunning, "all 4 pods are running"}},
		wantWorker: &paddlev1.ReplicaStatus{Running: 2, Ready: "2/2"},
	}, {
		name: "one worker done, the rest running: still running",
		job:  ps,
		states: podStates{
			"wd-ps-0": running("1.1.1.1"), "wd-ps-1": running("1.1.1.2"), "wd-worker-0": succeeded, "wd-worker-1": running("1.1.1.4"),
		},
		wantPhase: paddlev1.PaddleJobRunning, wantMode: paddlev1.PaddleJobModePS,
		wantWorker: &paddlev1.ReplicaStatus{Running: 1, Succeeded: 1, Ready: "1/2"},
	}, {
		name:      "single-worker job",
		job:       testutil.MakePaddleJob("s", "ns").Workers(1).Obj(),
		states:    podStates{"s-worker-0": running("1.1.1.1")},
		wantPhase: paddlev1.PaddleJobRunning, wantMode: paddlev1.PaddleJobModeSingle,
	}})
}

// TestNextStatusSaysWhyPodsWait: pods the scheduler cannot place, or whose
// containers the kubelet cannot start, hold the job Pending with their
// words, the pods grouped by cause; a pod only starting holds nothing.
func TestNextStatusSaysWhyPodsWait(t *testing.T) {
	ps := statusPSJob()
	const insufficient = "0/1 nodes are available: 1 Insufficient cpu."
	full := func(w *testutil.PodWrapper) *testutil.PodWrapper {
		return w.Unschedulable(insufficient + " no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
	}
	noPull := func(w *testutil.PodWrapper) *testutil.PodWrapper {
		return w.Scheduled("n").Waiting("ImagePullBackOff", `Back-off pulling image "nosuch:1"`)
	}
	creating := func(w *testutil.PodWrapper) *testutil.PodWrapper {
		return w.Scheduled("n").Waiting("ContainerCreating", "")
	}
	runNextStatusCases(t, []nextStatusCase{{
		name:      "workers the scheduler cannot place, grouped, the scheduler's first sentence",
		job:       ps,
		states:    podStates{"wd-ps-0": running("1.1.1.1"), "wd-ps-1": running("1.1.1.2"), "wd-worker-0": full, "wd-worker-1": full},
		missing:   []string{"wd-worker-0", "wd-worker-1"},
		wantPhase: paddlev1.PaddleJobPending, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobCreated: {metav1.ConditionTrue, ReasonPodsCreated, "all 4 pods exist"},
			paddlev1.JobRunning: {metav1.ConditionFalse, paddlev1.ReasonUnschedulable, "the scheduler cannot place wd-worker-0, wd-worker-1: " + insufficient},
		},
		wantWorker: &paddlev1.ReplicaStatus{Pending: 2, Ready: "0/2"},
	}, {
		name:      "an image the kubelet cannot pull",
		job:       ps,
		states:    podStates{"wd-ps-0": noPull, "wd-ps-1": running("1.1.1.2"), "wd-worker-0": creating, "wd-worker-1": creating},
		missing:   []string{"wd-ps-0"},
		wantPhase: paddlev1.PaddleJobPending, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobRunning: {metav1.ConditionFalse, paddlev1.ReasonCannotStart, `the kubelet cannot start wd-ps-0: container paddle: ImagePullBackOff: Back-off pulling image "nosuch:1"`},
		},
	}, {
		name:      "unschedulable comes before an image pull, which waits on the node",
		job:       ps,
		states:    podStates{"wd-ps-0": noPull, "wd-ps-1": running("1.1.1.2"), "wd-worker-0": full, "wd-worker-1": creating},
		wantPhase: paddlev1.PaddleJobPending, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobRunning: {metav1.ConditionFalse, paddlev1.ReasonUnschedulable, "wd-worker-0: " + insufficient},
		},
	}, {
		name:      "containers being created hold nothing",
		job:       ps,
		states:    podStates{"wd-ps-0": creating, "wd-ps-1": creating, "wd-worker-0": creating, "wd-worker-1": creating},
		wantPhase: paddlev1.PaddleJobStarting, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobRunning: {metav1.ConditionFalse, ReasonWaitingForPods, "waiting for wd-ps-0"},
		},
	}})
}

// TestNextStatusFinishesWhenWorkersSucceedOrAPodFails: every worker
// succeeded completes the job; a pod failure fails it, naming the pod.
func TestNextStatusFinishesWhenWorkersSucceedOrAPodFails(t *testing.T) {
	ps := statusPSJob()
	runNextStatusCases(t, []nextStatusCase{{
		name: "PS job completes when every worker succeeded, pservers still running",
		job:  ps,
		states: podStates{
			"wd-ps-0": running("1.1.1.1"), "wd-ps-1": running("1.1.1.2"), "wd-worker-0": succeeded, "wd-worker-1": succeeded,
		},
		wantPhase: paddlev1.PaddleJobCompleted, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobSucceeded: {metav1.ConditionTrue, ReasonWorkersSucceeded, "all 2 workers succeeded"},
			paddlev1.JobRunning:   {metav1.ConditionFalse, ReasonJobFinished, "the job completed"},
		},
		wantWorker: &paddlev1.ReplicaStatus{Succeeded: 2, Ready: "0/2"},
		wantPS:     &paddlev1.ReplicaStatus{Stopped: 2, Ready: "0/2"},
	}, {
		name: "a worker's non-zero exit fails the job, naming pod, container and code",
		job:  ps,
		states: podStates{
			"wd-ps-0": running("1.1.1.1"), "wd-ps-1": running("1.1.1.2"), "wd-worker-0": running("1.1.1.3"), "wd-worker-1": failed(3),
		},
		wantPhase: paddlev1.PaddleJobFailed, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobFailed: {metav1.ConditionTrue, ReasonPodFailed, `pod wd-worker-1: container "paddle" exited with code 3 (Error)`},
		},
		wantWorker: &paddlev1.ReplicaStatus{Failed: 1, Stopped: 1, Ready: "0/2"},
		wantPS:     &paddlev1.ReplicaStatus{Stopped: 2, Ready: "0/2"},
	}, {
		name: "a pserver failure fails the job",
		job:  ps,
		states: podStates{
			"wd-ps-0": running("1.1.1.1"), "wd-ps-1": failed(137), "wd-worker-0": running("1.1.1.3"), "wd-worker-1": running("1.1.1.4"),
		},
		wantPhase: paddlev1.PaddleJobFailed, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{
			paddlev1.JobFailed: {metav1.ConditionTrue, ReasonPodFailed, `pod wd-ps-1: container "paddle" exited with code 137`},
		},
	}, {
		name:      "collective job completes when all workers succeed",
		job:       testutil.MakePaddleJob("r", "ns").Workers(2).Obj(),
		states:    podStates{"r-worker-0": succeeded, "r-worker-1": succeeded},
		wantPhase: paddlev1.PaddleJobCompleted, wantMode: paddlev1.PaddleJobModeCollective,
	}})
}

// TestNextStatusFailsAnInvalidSpec: an invalid spec fails the job before
// any pod.
func TestNextStatusFailsAnInvalidSpec(t *testing.T) {
	ps := statusPSJob()
	runNextStatusCases(t, []nextStatusCase{{
		name:      "an invalid spec fails the job before any pod",
		job:       ps,
		invalid:   "spec.worker.template: container name reserved",
		wantPhase: paddlev1.PaddleJobFailed, wantMode: paddlev1.PaddleJobModePS,
		wantConds: map[string]statusCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonInvalidSpec, "container name reserved"}},
	}})
}

func TestTerminalPhaseIsKept(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").Workers(1).Obj()
	job.Status.Phase = paddlev1.PaddleJobCompleted
	obs := observed{pods: podsOf(job, map[string]func(*testutil.PodWrapper) *testutil.PodWrapper{"wd-worker-0": failed(1)})}
	if st := nextStatus(job, obs, metav1.Now()); st.Phase != paddlev1.PaddleJobCompleted {
		t.Errorf("a completed job moved to %s", st.Phase)
	}
}

func TestConditionTransitionTimeIsKeptWhileStatusHolds(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").Workers(2).Obj()
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	obs := observed{pods: podsOf(job, map[string]func(*testutil.PodWrapper) *testutil.PodWrapper{"wd-worker-0": starting})}
	job.Status = nextStatus(job, obs, t0)
	obs = observed{pods: podsOf(job, map[string]func(*testutil.PodWrapper) *testutil.PodWrapper{"wd-worker-0": starting, "wd-worker-1": starting})}
	st := nextStatus(job, obs, metav1.NewTime(t0.Add(time.Minute)))
	if c := meta.FindStatusCondition(st.Conditions, paddlev1.JobRunning); !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("Running condition moved its transition time to %v while staying False", c.LastTransitionTime)
	}
	if c := meta.FindStatusCondition(st.Conditions, paddlev1.JobCreated); c.Status != metav1.ConditionTrue || c.LastTransitionTime.Equal(&t0) {
		t.Errorf("Created condition = %+v; want True with a new transition time", c)
	}
	if !st.StartTime.Equal(&t0) {
		t.Errorf("startTime moved to %v", st.StartTime)
	}
}

// An action's failure is reported under its own reason on the Created
// condition, with its error, and returned for a retry.
func TestActionErrorsHaveTheirReasons(t *testing.T) {
	refuse := func(kind string) func(client.Object) error {
		return func(obj client.Object) error {
			if fmt.Sprintf("%T", obj) == kind {
				return apierrors.NewForbidden(schema.GroupResource{Resource: kind}, obj.GetName(), errors.New("refused by the test"))
			}
			return nil
		}
	}
	creates := func(refused func(client.Object) error) interceptor.Funcs {
		return interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := refused(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		}}
	}
	deletes := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		return refuse("*v1.Pod")(obj)
	}}
	job := func() *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("ae", "ns").UID("ae-uid").Workers(2).Intranet(paddlev1.IntranetService).Obj()
	}
	tests := []struct {
		name   string
		funcs  interceptor.Funcs
		pods   func(*paddlev1.PaddleJob) []*corev1.Pod
		reason string
	}{
		{name: "a pod refused", funcs: creates(refuse("*v1.Pod")), reason: paddlev1.ReasonPodCreationFailed},
		{name: "the Service refused", funcs: creates(refuse("*v1.Service")), reason: paddlev1.ReasonServiceFailed},
		{name: "the endpoints ConfigMap refused", funcs: creates(refuse("*v1.ConfigMap")), reason: paddlev1.ReasonEndpointsFailed},
		{name: "a pod scaled away not deleted", funcs: deletes, reason: paddlev1.ReasonPodDeletionFailed,
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				big := j.DeepCopy()
				big.Spec.Worker.Replicas = 3
				return podsOf(big, map[string]func(*testutil.PodWrapper) *testutil.PodWrapper{
					"ae-worker-0": running("10.0.0.1"), "ae-worker-1": running("10.0.0.2"), "ae-worker-2": running("10.0.0.3"),
				})
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := job()
			var pods []*corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(j)
			}
			f := newFixtureWith(t, Options{}, tc.funcs, objects(j, pods...)...)
			got := f.reconcile(t, j)
			if got.err == nil || !strings.Contains(got.err.Error(), "refused by the test") {
				t.Errorf("error %v, want the action's", got.err)
			}
			c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobCreated)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, "refused by the test") {
				t.Errorf("Created condition %+v, want False, %s, with the error", c, tc.reason)
			}
		})
	}
}

// A conflict writing the status is returned, for controller-runtime to
// requeue the job and reconcile it from the newer one: the one policy of
// every write of the reconciler.
func TestStatusWriteConflictIsReturned(t *testing.T) {
	conflict := interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		return apierrors.NewConflict(paddlev1.GroupVersion.WithResource("paddlejobs").GroupResource(), obj.GetName(), errors.New("the job changed"))
	}}
	tests := []struct {
		name   string
		job    *paddlev1.PaddleJob
		states map[string]func(*testutil.PodWrapper) *testutil.PodWrapper
		// untouched: the pass changes no pod (a write-ahead record comes
		// before the deletes it records).
		untouched bool
	}{
		{name: "a running job's status", job: testutil.MakePaddleJob("cj", "ns").UID("cj-uid").Workers(2).Obj(),
			states: map[string]func(*testutil.PodWrapper) *testutil.PodWrapper{"cj-worker-0": running("10.0.0.1"), "cj-worker-1": running("10.0.0.2")}, untouched: true},
		{name: "a suspended job's status", job: testutil.MakePaddleJob("cj", "ns").UID("cj-uid").Workers(2).Suspend(true).Obj()},
		{name: "a restart's write-ahead record", job: testutil.MakePaddleJob("cj", "ns").UID("cj-uid").Workers(2).RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyExitCode).Obj(),
			states: map[string]func(*testutil.PodWrapper) *testutil.PodWrapper{"cj-worker-0": running("10.0.0.1"), "cj-worker-1": failed(137)}, untouched: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureWith(t, Options{}, conflict, objects(tc.job, podsOf(tc.job, tc.states)...)...)
			got := f.reconcile(t, tc.job)
			if !apierrors.IsConflict(got.err) {
				t.Errorf("error %v, want the conflict", got.err)
			}
			if tc.untouched && (len(got.created) != 0 || len(got.deleted) != 0) {
				t.Errorf("created %v, deleted %v after a conflict", got.created, got.deleted)
			}
		})
	}
}
