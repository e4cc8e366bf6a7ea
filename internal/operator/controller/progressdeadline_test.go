package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/progress"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// runningSince is the status of a job whose pods all run since t0-ago.
func runningSince(ago time.Duration) paddlev1.PaddleJobStatus {
	since := metav1.NewTime(t0.Add(-ago))
	return paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, StartTime: &since, Conditions: []metav1.Condition{
		{Type: paddlev1.JobRunning, Status: metav1.ConditionTrue, Reason: ReasonAllPodsRunning, LastTransitionTime: since},
	}}
}

func TestProgressStalled(t *testing.T) {
	restarting := runningSince(5 * time.Minute)
	restarting.Conditions = append(restarting.Conditions, metav1.Condition{Type: paddlev1.JobRestarting, Status: metav1.ConditionTrue, Reason: ReasonPodFailed})
	starting := runningSince(5 * time.Minute)
	starting.Conditions[0].Status = metav1.ConditionFalse
	tests := []struct {
		name     string
		deadline *int64
		status   paddlev1.PaddleJobStatus
		last     lastReport
		wantWait time.Duration
		wantMsg  string // "" for no stall
	}{
		{name: "no deadline: nothing is watched", status: runningSince(time.Hour)},
		{name: "not every pod runs yet", deadline: ptr.To[int64](60), status: starting},
		{name: "a restart is under way", deadline: ptr.To[int64](60), status: restarting},
		{name: "the clock starts when every pod runs", deadline: ptr.To[int64](60), status: runningSince(20 * time.Second), wantWait: 40 * time.Second},
		{name: "and again at each report", deadline: ptr.To[int64](60), status: runningSince(5 * time.Minute),
			last: lastReport{pod: "j-worker-1", at: t0.Add(-10 * time.Second)}, wantWait: 50 * time.Second},
		{name: "no report since every pod ran", deadline: ptr.To[int64](60), status: runningSince(61 * time.Second),
			wantMsg: "no progress reported in the 1m1s since every pod ran at 2026-03-01T11:58:59Z (progressDeadlineSeconds 60): no report came yet"},
		{name: "a report from before the pods last started does not count", deadline: ptr.To[int64](60), status: runningSince(90 * time.Second),
			last:    lastReport{pod: "j-worker-0", at: t0.Add(-10 * time.Minute)},
			wantMsg: "the last report, from pod j-worker-0 at 2026-03-01T11:50:00Z, came before"},
		{name: "the last report names its pod and time", deadline: ptr.To[int64](60), status: runningSince(5 * time.Minute),
			last:    lastReport{pod: "j-worker-1", at: t0.Add(-61 * time.Second)},
			wantMsg: "no progress reported for 1m1s (progressDeadlineSeconds 60): the last report came at 2026-03-01T11:58:59Z from pod j-worker-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Status(tc.status).Obj()
			job.Spec.ProgressDeadlineSeconds = tc.deadline
			cause, wait := progressStalled(job, tc.last, t0)
			if wait != tc.wantWait {
				t.Errorf("wait %s, want %s", wait, tc.wantWait)
			}
			switch {
			case tc.wantMsg == "" && cause != nil:
				t.Errorf("stalled: %+v", cause)
			case tc.wantMsg != "" && (cause == nil || cause.reason != ReasonProgressDeadlineExceeded || !strings.Contains(cause.message, tc.wantMsg)):
				t.Errorf("cause %+v, want %s with %q", cause, ReasonProgressDeadlineExceeded, tc.wantMsg)
			}
		})
	}
}

// A job whose training stops reporting: restarted as a whole when the
// workers' policy restarts pods, failed with the last report named when it
// does not, and left alone by an operator that takes no reports.
func TestProgressDeadlinePass(t *testing.T) {
	stalledJob := func(policy paddlev1.RestartPolicy) *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("hang", "ns").UID("hang-uid").PS(1).Workers(2).
			RolePolicy(paddlev1.ReplicaPS, policy).RolePolicy(paddlev1.ReplicaWorker, policy).
			ProgressDeadlineSeconds(60).Status(runningSince(5 * time.Minute)).Obj()
	}
	runningPods := func(job *paddlev1.PaddleJob) []*corev1.Pod {
		return []*corev1.Pod{
			testutil.MakePod(job, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj(),
			testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Running("10.0.0.2").Obj(),
			testutil.MakePod(job, paddlev1.ReplicaWorker, 1).Running("10.0.0.3").Obj(),
		}
	}
	withStore := func(f *fixture) *progress.Store {
		store := progress.NewStore(progress.Options{Clock: f.clock})
		f.r.Options.Progress = ProgressOptions{Store: store, URL: "http://127.0.0.1:9444"}
		return store
	}
	report := func(t *testing.T, store *progress.Store, pod string) {
		t.Helper()
		if err := store.Put(types.NamespacedName{Namespace: "ns", Name: "hang"}, "hang-uid", pod, 1, progress.Report{Step: ptr.To[int64](40)}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("ExitCode restarts the job", func(t *testing.T) {
		job := stalledJob(paddlev1.RestartPolicyExitCode)
		f := newFixture(t, Options{}, objects(job, runningPods(job)...)...)
		store := withStore(f)
		f.clock.SetTime(t0.Add(-2 * time.Minute))
		report(t, store, "hang-worker-1")
		f.clock.SetTime(t0)
		got := f.reconcile(t, job)
		passWant{deleted: []string{"hang-ps-0", "hang-worker-0", "hang-worker-1"}, conditions: map[string]wantCondition{
			paddlev1.JobRestarting: {metav1.ConditionTrue, ReasonProgressDeadlineExceeded}}}.check(t, got)
		c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobRestarting)
		if !strings.Contains(c.Message, "the last report came at 2026-03-01T11:58:00Z from pod hang-worker-1") || got.job.Status.RestartCount != 1 {
			t.Errorf("restart %d: %s", got.job.Status.RestartCount, c.Message)
		}
	})
	t.Run("Never fails the job naming the last report", func(t *testing.T) {
		job := stalledJob(paddlev1.RestartPolicyNever)
		f := newFixture(t, Options{}, objects(job, runningPods(job)...)...)
		store := withStore(f)
		f.clock.SetTime(t0.Add(-90 * time.Second))
		report(t, store, "hang-worker-0")
		f.clock.SetTime(t0)
		got := f.reconcile(t, job)
		passWant{deleted: []string{"hang-ps-0", "hang-worker-0", "hang-worker-1"}, phase: paddlev1.PaddleJobFailed, conditions: map[string]wantCondition{
			paddlev1.JobFailed: {metav1.ConditionTrue, ReasonProgressDeadlineExceeded}}}.check(t, got)
		c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobFailed)
		if !strings.Contains(c.Message, "no progress reported for 1m30s (progressDeadlineSeconds 60): the last report came at 2026-03-01T11:58:30Z from pod hang-worker-0") {
			t.Errorf("Failed message %q", c.Message)
		}
	})
	t.Run("a recent report sets the next check", func(t *testing.T) {
		job := stalledJob(paddlev1.RestartPolicyExitCode)
		f := newFixture(t, Options{}, objects(job, runningPods(job)...)...)
		store := withStore(f)
		f.clock.SetTime(t0.Add(-15 * time.Second))
		report(t, store, "hang-worker-0")
		f.clock.SetTime(t0)
		passWant{requeue: 45 * time.Second, phase: paddlev1.PaddleJobRunning}.check(t, f.reconcile(t, job))
	})
	t.Run("without the progress endpoint the deadline is not applied", func(t *testing.T) {
		job := stalledJob(paddlev1.RestartPolicyExitCode)
		f := newFixture(t, Options{}, objects(job, runningPods(job)...)...)
		passWant{phase: paddlev1.PaddleJobRunning}.check(t, f.reconcile(t, job))
	})
	t.Run("after an operator restart the status's last report counts", func(t *testing.T) {
		job := stalledJob(paddlev1.RestartPolicyExitCode)
		at := metav1.NewTime(t0.Add(-20 * time.Second))
		job.Status.Progress = &paddlev1.JobProgress{Reporter: "hang-worker-0", LastUpdateTime: &at}
		f := newFixture(t, Options{}, objects(job, runningPods(job)...)...)
		withStore(f)
		passWant{requeue: 40 * time.Second, phase: paddlev1.PaddleJobRunning}.check(t, f.reconcile(t, job))
	})
}
