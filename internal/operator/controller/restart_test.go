package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// settled is when failures that happened at t0 are judged: once their
// settling window has passed.
var settled = t0.Add(DefaultFailureSettleWindow)

// longAgo is when the failures of the pass tests happened: their settling
// window has passed at t0.
var longAgo = t0.Add(-time.Minute)

// failuresCase is a job's restart settings, its pods, and what
// evaluateFailures must decide of them.
type failuresCase struct {
	name         string
	policy       paddlev1.RestartPolicy
	retryable    []int32
	backoffLimit int32
	recorded     int32
	counted      []string
	pods         []*corev1.Pod
	wantFatal    string // reason, "" for none
	wantMsg      string
	wantRecreate []string
	wantRestarts int32
}

// check evaluates the failures of the case's job: the job fails with the
// reason and message wanted, or else the pods to recreate and the restarts
// counted are the ones wanted.
func (tc failuresCase) check(t *testing.T) {
	t.Helper()
	job := testutil.MakePaddleJob("j", "ns").Workers(4).Obj()
	job.Spec.Worker.RestartPolicy = tc.policy
	job.Spec.Worker.RetryableExitCodes = tc.retryable
	job.Spec.BackoffLimit = &tc.backoffLimit
	job.Status.RestartCount = tc.recorded
	job.Status.RecreatingPods = tc.counted
	f := evaluateFailures(job, tc.pods, settled, DefaultFailureSettleWindow)
	switch {
	case tc.wantFatal == "" && f.fatal != nil:
		t.Fatalf("job failed: %+v", f.fatal)
	case tc.wantFatal != "" && (f.fatal == nil || f.fatal.Reason != tc.wantFatal || !strings.Contains(f.fatal.Message, tc.wantMsg)):
		t.Fatalf("fatal = %+v; want %s containing %q", f.fatal, tc.wantFatal, tc.wantMsg)
	}
	if tc.wantFatal != "" {
		return
	}
	var names []string
	for _, p := range f.recreate {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff(tc.wantRecreate, names); diff != "" {
		t.Errorf("recreate (-want +got):\n%s", diff)
	}
	if f.restarts != tc.wantRestarts {
		t.Errorf("restarts = %d, want %d", f.restarts, tc.wantRestarts)
	}
}

func TestEvaluateFailures(t *testing.T) {
	pod := func(name string, state func(*testutil.PodWrapper) *testutil.PodWrapper, restarts int32) *corev1.Pod {
		rt, idx := paddlev1.ReplicaWorker, 0
		fmt.Sscanf(name[len("j-worker-"):], "%d", &idx)
		job := testutil.MakePaddleJob("j", "ns").Workers(4).Obj()
		p := state(testutil.WrapPod(newPod(job, rt, idx, podcontract.PortRange{First: 23000, Count: 3}, podOptions{}))).FinishedAt(t0).Obj()
		p.UID = types.UID("uid-" + name)
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].RestartCount = restarts
			p.Status.ContainerStatuses[i].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
		}
		return p
	}
	run := func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Running("1.1.1.1") }
	exit := func(code int32) func(*testutil.PodWrapper) *testutil.PodWrapper {
		return func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Failed("paddle", code) }
	}
	evicted := func(w *testutil.PodWrapper) *testutil.PodWrapper {
		w.Status.Phase, w.Status.Reason, w.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		return w
	}
	for _, tc := range []failuresCase{{
		name: "Never: a failure fails the job", policy: paddlev1.RestartPolicyNever, backoffLimit: 6,
		pods:      []*corev1.Pod{pod("j-worker-0", run, 0), pod("j-worker-1", exit(137), 0)},
		wantFatal: ReasonPodFailed, wantMsg: `pod j-worker-1: container "paddle" exited with code 137`,
	}, {
		name: "ExitCode: killed by a signal is retried", policy: paddlev1.RestartPolicyExitCode, backoffLimit: 6,
		pods:         []*corev1.Pod{pod("j-worker-0", run, 0), pod("j-worker-1", exit(137), 0)},
		wantRecreate: []string{"j-worker-1"}, wantRestarts: 1,
	}, {
		name: "ExitCode: an application error fails the job", policy: paddlev1.RestartPolicyExitCode, backoffLimit: 6,
		pods:      []*corev1.Pod{pod("j-worker-1", exit(3), 0)},
		wantFatal: ReasonPodFailed, wantMsg: "exited with code 3",
	}, {
		name: "ExitCode: the configured list decides", policy: paddlev1.RestartPolicyExitCode, retryable: []int32{3}, backoffLimit: 6,
		pods:         []*corev1.Pod{pod("j-worker-1", exit(3), 0), pod("j-worker-2", run, 0)},
		wantRecreate: []string{"j-worker-1"}, wantRestarts: 1,
	}, {
		name: "ExitCode: an evicted pod is retried", policy: paddlev1.RestartPolicyExitCode, backoffLimit: 6,
		pods:         []*corev1.Pod{pod("j-worker-0", evicted, 0)},
		wantRecreate: []string{"j-worker-0"}, wantRestarts: 1,
	}, {
		name: "OnFailure: in-place restarts count", policy: paddlev1.RestartPolicyOnFailure, backoffLimit: 6,
		pods:         []*corev1.Pod{pod("j-worker-0", run, 2), pod("j-worker-1", run, 1)},
		wantRestarts: 3,
	}, {
		name: "restarts and recreations together exceed the limit", policy: paddlev1.RestartPolicyOnFailure, backoffLimit: 3, recorded: 2,
		pods:      []*corev1.Pod{pod("j-worker-0", run, 1), pod("j-worker-1", exit(1), 0)},
		wantFatal: ReasonBackoffLimitExceeded, wantMsg: "restarted 4 times, more than backoffLimit 3; last failure: pod j-worker-1",
	}, {
		name: "the limit counts in-place restarts of running pods alone", policy: paddlev1.RestartPolicyOnFailure, backoffLimit: 2,
		pods:      []*corev1.Pod{pod("j-worker-0", run, 3)},
		wantFatal: ReasonBackoffLimitExceeded, wantMsg: `last failure: pod j-worker-0: container "paddle" exited with code 1`,
	}, {
		name: "a failure already counted is not counted again", policy: paddlev1.RestartPolicyExitCode, backoffLimit: 6, recorded: 1,
		counted: []string{"uid-j-worker-1"}, pods: []*corev1.Pod{pod("j-worker-1", exit(137), 0)},
		wantRestarts: 1,
	}, {
		name: "backoffLimit 0 fails on the first retry", policy: paddlev1.RestartPolicyExitCode, backoffLimit: 0,
		pods:      []*corev1.Pod{pod("j-worker-1", exit(143), 0)},
		wantFatal: ReasonBackoffLimitExceeded,
	}} {
		t.Run(tc.name, tc.check)
	}
}

// An ExitCode role's failures reach the operator: its pods never restart
// in place. (The defaults themselves: api/v1's TestSetDefaults.)
func TestEffectiveRestartPolicy(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Elastic(1, 3).
		RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyExitCode).Obj().Defaulted()
	pod := newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{})
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("ExitCode pods must not restart in place: %s", pod.Spec.RestartPolicy)
	}
}

func TestRestartBackoff(t *testing.T) {
	for _, tc := range []struct {
		restarts int32
		want     time.Duration
	}{{1, 5 * time.Second}, {2, 10 * time.Second}, {3, 20 * time.Second}, {8, 5 * time.Minute}, {40, 5 * time.Minute}} {
		if got := restartBackoff(tc.restarts, 5*time.Second, 5*time.Minute); got != tc.want {
			t.Errorf("restartBackoff(%d) = %s, want %s", tc.restarts, got, tc.want)
		}
	}
}

// onFailureJob is a two-worker job whose workers restart on failure.
func onFailureJob() *testutil.JobWrapper {
	return testutil.MakePaddleJob("rs", "ns").UID("rs-uid").Workers(2).RestartPolicy(paddlev1.ReplicaWorker, corev1.RestartPolicyOnFailure)
}

// restartedStatus is the status of a running job restarted count times,
// the last one ago.
func restartedStatus(count int32, ago time.Duration) paddlev1.PaddleJobStatus {
	at := metav1.NewMicroTime(t0.Add(-ago))
	return paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, RestartCount: count, LastRestartTime: &at}
}

// TestRestartPass: a failed pod the restart policy restarts is counted
// once, deleted, and recreated after the backoff.
func TestRestartPass(t *testing.T) {
	runPassCases(t, []passCase{
		{
			name: "a worker failing under OnFailure is counted, then deleted",
			job:  onFailureJob().Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Failed("paddle", 137).FinishedAt(longAgo).Obj(),
				}
			},
			want: passWant{deleted: []string{"rs-worker-1"}},
			check: checkStatus(func(t *testing.T, st paddlev1.PaddleJobStatus) {
				if st.RestartCount != 1 || !slices.Equal(st.RecreatingPods, []string{"rs-worker-1-uid"}) || st.LastRestartTime == nil || !st.LastRestartTime.Equal(ptr.To(metav1.NewMicroTime(t0))) {
					t.Errorf("restart not recorded ahead: count %d, recreating %v, last %v", st.RestartCount, st.RecreatingPods, st.LastRestartTime)
				}
			}),
		},
		{
			name: "the replacement waits for the restart backoff",
			job:  onFailureJob().Status(restartedStatus(1, 2*time.Second)).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj()}
			},
			want: passWant{requeue: 3 * time.Second, phase: paddlev1.PaddleJobPending,
				conditions: map[string]wantCondition{paddlev1.JobRunning: {metav1.ConditionFalse, ReasonRestartBackoff}}},
		},
		{
			name: "after the backoff the replacement is created",
			job:  onFailureJob().Status(restartedStatus(1, 6*time.Second)).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj()}
			},
			want: passWant{created: []string{"rs-worker-1"}, requeue: expectationTimeout},
		},
		{
			name: "a pod counted already is only deleted, not counted again",
			job: onFailureJob().Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, RestartCount: 1,
				RecreatingPods: []string{"rs-worker-1-uid"}, LastRestartTime: ptr.To(metav1.NewMicroTime(t0))}).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Failed("paddle", 137).FinishedAt(longAgo).Obj(),
				}
			},
			want: passWant{deleted: []string{"rs-worker-1"}},
			check: checkStatus(func(t *testing.T, st paddlev1.PaddleJobStatus) {
				if st.RestartCount != 1 {
					t.Errorf("restart count %d, want 1: the failure was counted before", st.RestartCount)
				}
			}),
		},
	})
}

// TestRestartPassFailsTheJob: a failure the policy does not restart, or
// one restart too many, fails the job and stops its other pods.
func TestRestartPassFailsTheJob(t *testing.T) {
	runPassCases(t, []passCase{
		{
			name: "a failure under Never fails the job and stops its other pods",
			job:  testutil.MakePaddleJob("rs", "ns").UID("rs-uid").Workers(2).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Failed("paddle", 1).FinishedAt(longAgo).Obj(),
				}
			},
			want: passWant{deleted: []string{"rs-worker-0"}, phase: paddlev1.PaddleJobFailed,
				conditions: map[string]wantCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonPodFailed}}},
		},
		{
			name: "a restart past backoffLimit fails the job",
			job:  onFailureJob().BackoffLimit(1).Status(restartedStatus(1, time.Minute)).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Failed("paddle", 137).FinishedAt(longAgo).Obj(),
				}
			},
			want: passWant{deleted: []string{"rs-worker-0"}, phase: paddlev1.PaddleJobFailed,
				conditions: map[string]wantCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonBackoffLimitExceeded}}},
		},
	})
}

// runningOrFailedPod is the pod of job's role rt and index i, running
// when code is 0, else failed with that exit code.
func runningOrFailedPod(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, i int, code int32) *corev1.Pod {
	w := testutil.MakePod(job, rt, i)
	if code == 0 {
		return w.Running(fmt.Sprintf("10.0.0.%d", i+1)).Obj()
	}
	return w.Failed("paddle", code).FinishedAt(t0).Obj()
}

// wholeJobRestartCase is a job, the exit codes of its failed pods, and
// whether evaluateFailures fails it, restarts it as a whole, or recreates
// pods alone.
type wholeJobRestartCase struct {
	name        string
	job         *paddlev1.PaddleJob
	codes       map[string]int32 // failed pods' exit codes by "<role>-<index>"
	wantFatal   string
	wantJob     string // the restart cause's message, "" for no restart of the whole job
	wantPods    []string
	wantCounted int32
}

// check builds the job's pods, running or failed with their codes, and
// checks evaluateFailures' decision: a failed job restarts nothing; else
// the restart of the whole job, the pods recreated alone and the restarts
// counted are the ones wanted.
func (tc wholeJobRestartCase) check(t *testing.T) {
	t.Helper()
	tc.job = tc.job.Defaulted() // as Reconcile reads it
	var pods []*corev1.Pod
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < tc.job.Spec.ReplicaCount(rt); i++ {
			pods = append(pods, runningOrFailedPod(tc.job, rt, i, tc.codes[fmt.Sprintf("%s-%d", rt, i)]))
		}
	}
	f := evaluateFailures(tc.job, pods, settled, DefaultFailureSettleWindow)
	if tc.wantFatal != "" {
		if f.fatal == nil || f.fatal.Reason != tc.wantFatal {
			t.Fatalf("fatal = %+v, want reason %s", f.fatal, tc.wantFatal)
		}
		if f.restarting() {
			t.Errorf("a failed job restarts pods: %+v", f)
		}
		return
	}
	if f.fatal != nil {
		t.Fatalf("job failed: %+v", f.fatal)
	}
	switch {
	case tc.wantJob == "" && f.restartJob != nil:
		t.Errorf("the whole job restarts: %+v", f.restartJob)
	case tc.wantJob != "" && (f.restartJob == nil || f.restartJob.reason != ReasonPodFailed || !strings.HasPrefix(f.restartJob.message, tc.wantJob)):
		t.Errorf("restart of the whole job %+v, want reason %s and a message starting %q", f.restartJob, ReasonPodFailed, tc.wantJob)
	}
	var names []string
	for _, p := range f.recreate {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, tc.wantPods) {
		t.Errorf("recreated alone %v, want %v", names, tc.wantPods)
	}
	if f.restarts != tc.wantCounted {
		t.Errorf("restarts %d, want %d", f.restarts, tc.wantCounted)
	}
}

func TestEvaluateFailuresOfAJobRestartedAsAWhole(t *testing.T) {
	psJob := func() *testutil.JobWrapper {
		return testutil.MakePaddleJob("j", "ns").PS(2).Workers(2).
			RolePolicy(paddlev1.ReplicaPS, paddlev1.RestartPolicyExitCode).
			RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyExitCode)
	}
	for _, tc := range []wholeJobRestartCase{{
		name: "a parameter server killed by SIGSEGV restarts every pod, once", job: psJob().Obj(),
		codes:   map[string]int32{"ps-1": 139},
		wantJob: `pod j-ps-1: container "paddle" exited with code 139 (signal SIGSEGV, Error)`, wantCounted: 1,
	}, {
		name: "pods failing together are one restart, named after the first", job: psJob().Obj(),
		codes:   map[string]int32{"ps-1": 139, "worker-0": 137},
		wantJob: "pod j-ps-1:", wantCounted: 1,
	}, {
		name: "OnFailure restarts the whole job too", job: psJob().RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyOnFailure).Obj(),
		codes:   map[string]int32{"worker-1": 1},
		wantJob: `pod j-worker-1: container "paddle" exited with code 1 (Error)`, wantCounted: 1,
	}, {
		name: "a failure the policy does not restart fails the job", job: psJob().Obj(),
		codes:     map[string]int32{"ps-1": 139, "worker-1": 3},
		wantFatal: ReasonPodFailed,
	}, {
		name: "the restart of the whole job counts against backoffLimit", job: psJob().BackoffLimit(0).Obj(),
		codes:     map[string]int32{"worker-1": 137},
		wantFatal: ReasonBackoffLimitExceeded,
	}, {
		name: "restartScope Pod recreates the failed pod alone", job: psJob().RestartScope(paddlev1.RestartScopePod).Obj(),
		codes:    map[string]int32{"ps-1": 139},
		wantPods: []string{"j-ps-1"}, wantCounted: 1,
	}, {
		name: "a collective job recreates the failed pod alone", job: testutil.MakePaddleJob("j", "ns").Workers(3).RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyExitCode).Obj(),
		codes:    map[string]int32{"worker-1": 137},
		wantPods: []string{"j-worker-1"}, wantCounted: 1,
	}} {
		t.Run(tc.name, tc.check)
	}
}

// Where a failure restarts the whole job, no container restarts in place.
// (The default scope itself: api/v1's TestSetDefaults.)
func TestEffectiveRestartScope(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyOnFailure).Obj().Defaulted()
	if p := newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{}); p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("a PS worker under OnFailure restarts in place (%s): its failure would never restart the job", p.Spec.RestartPolicy)
	}
	job.Spec.RestartScope = paddlev1.RestartScopePod
	if p := newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{}); p.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("restartScope Pod under OnFailure: pod restartPolicy %s, want OnFailure", p.Spec.RestartPolicy)
	}
}

// A parameter server crashes: the job is restarted as a whole, pass by pass
// — counted and every pod deleted; nothing created while a pod still stops
// or the backoff runs; every pod created anew; Restarting False once they run.
func TestWholeJobRestartPasses(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").UID("wd-uid").PS(2).Workers(2).
		RolePolicy(paddlev1.ReplicaPS, paddlev1.RestartPolicyExitCode).
		RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyExitCode).
		Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning}).Obj()
	pods := []*corev1.Pod{
		testutil.MakePod(job, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj(),
		testutil.MakePod(job, paddlev1.ReplicaPS, 1).Failed("paddle", 139).FinishedAt(longAgo).Obj(),
		testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Running("10.0.0.3").Obj(),
		// A finalizer holds it: it stops slowly.
		testutil.MakePod(job, paddlev1.ReplicaWorker, 1).Running("10.0.0.4").Terminating().Obj(),
	}
	pods[3].DeletionTimestamp = nil // not being deleted yet: the restart deletes it
	f := newFixture(t, Options{}, objects(job, pods...)...)
	ctx := context.Background()

	got := f.reconcile(t, job)
	passWant{deleted: []string{"wd-ps-0", "wd-ps-1", "wd-worker-0", "wd-worker-1"},
		conditions: map[string]wantCondition{paddlev1.JobRestarting: {metav1.ConditionTrue, ReasonPodFailed}}}.check(t, got)
	st := got.job.Status
	if st.RestartCount != 1 || len(st.RecreatingPods) != 4 || st.LastRestartTime == nil || !st.LastRestartTime.Time.Equal(t0) {
		t.Fatalf("restart not recorded ahead: count %d, recreating %v, last %v", st.RestartCount, st.RecreatingPods, st.LastRestartTime)
	}
	c := meta.FindStatusCondition(st.Conditions, paddlev1.JobRestarting)
	if want := `restart 1 (backoffLimit 6), restarting all 4 pods of the job after pod wd-ps-1: container "paddle" exited with code 139 (signal SIGSEGV, Error)`; c.Message != want {
		t.Errorf("Restarting message\n %q, want\n %q", c.Message, want)
	}
	if ev := drainEvents(f); !slices.ContainsFunc(ev, func(e string) bool {
		return strings.Contains(e, "RestartingJob") && strings.Contains(e, "wd-ps-1") && strings.Contains(e, "SIGSEGV")
	}) {
		t.Errorf("no RestartingJob event naming the pod and signal: %q", ev)
	}

	// worker-1 still stops: nothing is created, whatever the backoff.
	f.clock.Step(time.Minute)
	passWant{phase: paddlev1.PaddleJobPending, conditions: map[string]wantCondition{
		paddlev1.JobRunning: {metav1.ConditionFalse, ReasonStoppingPods}}}.check(t, f.reconcile(t, job))

	// It is gone: every pod is created anew, with no further restart counted.
	w1 := &corev1.Pod{}
	if err := f.client.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "wd-worker-1"}, w1); err != nil {
		t.Fatal(err)
	}
	w1.Finalizers = nil
	if err := f.client.Update(ctx, w1); err != nil {
		t.Fatal(err)
	}
	got = f.reconcile(t, job)
	passWant{created: []string{"wd-ps-0", "wd-ps-1", "wd-worker-0", "wd-worker-1"}, requeue: expectationTimeout}.check(t, got)
	if got.job.Status.RestartCount != 1 {
		t.Errorf("restart count %d after the recreation, want 1", got.job.Status.RestartCount)
	}

	// Once they all run, the restart is over.
	for i, name := range []string{"wd-ps-0", "wd-ps-1", "wd-worker-0", "wd-worker-1"} {
		p := got.pods[name]
		running := testutil.WrapPod(p).Running(fmt.Sprintf("10.0.1.%d", i+1)).Obj()
		if err := f.client.Status().Update(ctx, running); err != nil {
			t.Fatal(err)
		}
	}
	got = f.reconcile(t, job)
	passWant{phase: paddlev1.PaddleJobRunning, conditions: map[string]wantCondition{
		paddlev1.JobRunning:    {metav1.ConditionTrue, ReasonAllPodsRunning},
		paddlev1.JobRestarting: {metav1.ConditionFalse, ReasonRestarted}}}.check(t, got)
	if len(got.job.Status.RecreatingPods) != 0 {
		t.Errorf("recreatingPods %v once the old pods are gone", got.job.Status.RecreatingPods)
	}
}

// drainEvents returns the events recorded so far.
func drainEvents(f *fixture) []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
