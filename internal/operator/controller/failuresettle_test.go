package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// exit is how a pod of a settling test fails: its container's exit code
// and when it finished, after t0.
type exit struct {
	code  int32
	after time.Duration
}

// settleStep is one pass of a settling test: the pods that have failed by
// then (by short name: "worker-1"), the fake clock's time after t0, and
// what the pass must do.
type settleStep struct {
	fail  map[string]exit
	clock time.Duration
	want  passWant
	// wantMsg starts the message of the condition the pass sets, Failed
	// when the job fails, Restarting when it restarts ("" checks nothing).
	wantMsg string
}

// settleCase is a running job, every pod running, and the passes that
// see its pods fail.
type settleCase struct {
	name  string
	job   *paddlev1.PaddleJob
	steps []settleStep
}

func (tc settleCase) run(t *testing.T) {
	var pods []*corev1.Pod
	for _, rt := range paddlev1.ReplicaTypes {
		for i := range tc.job.Spec.ReplicaCount(rt) {
			pods = append(pods, testutil.MakePod(tc.job, rt, i).Running(fmt.Sprintf("10.0.%d.%d", len(pods), i+1)).Obj())
		}
	}
	f := newFixture(t, Options{}, objects(tc.job, pods...)...)
	ctx := context.Background()
	for i, step := range tc.steps {
		for short, e := range step.fail {
			p := &corev1.Pod{}
			if err := f.client.Get(ctx, types.NamespacedName{Namespace: tc.job.Namespace, Name: tc.job.Name + "-" + short}, p); err != nil {
				t.Fatal(err)
			}
			failed := testutil.WrapPod(p).Failed("paddle", e.code).FinishedAt(t0.Add(e.after)).Obj()
			if err := f.client.Status().Update(ctx, failed); err != nil {
				t.Fatal(err)
			}
		}
		f.clock.SetTime(t0.Add(step.clock))
		got := f.reconcile(t, tc.job)
		t.Logf("pass %d at t0+%s: deleted %v, requeue %s", i+1, step.clock, got.deleted, got.result.RequeueAfter)
		step.want.check(t, got)
		if step.wantMsg == "" {
			continue
		}
		typ := paddlev1.JobRestarting
		if step.want.phase == paddlev1.PaddleJobFailed {
			typ = paddlev1.JobFailed
		}
		if c := meta.FindStatusCondition(got.job.Status.Conditions, typ); c == nil || !strings.Contains(c.Message, step.wantMsg) {
			t.Errorf("pass %d: condition %s %+v, want its message to say %q", i+1, typ, c, step.wantMsg)
		}
	}
}

// The same crash of a collective job, seen in any order, has one outcome.
// Rank 0's DataLoader crashes (exit 1, not retryable under ExitCode) and
// rank 1 loses its collective (exit 250, retryable) a second or two before
// or after; whichever the operator sees first, the job fails naming rank
// 0. The settling window is the default, 10 s.
func TestFailuresSeenInAnyOrderGetOneDecision(t *testing.T) {
	collective := func() *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("c", "ns").UID("c-uid").Workers(2).
			RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyExitCode).
			Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning}).Obj()
	}
	crash, lostPeer := exit{code: 1, after: 2 * time.Second}, exit{code: 250}
	settling := passWant{requeue: 9 * time.Second, phase: paddlev1.PaddleJobStarting,
		conditions: map[string]wantCondition{paddlev1.JobRunning: {metav1.ConditionFalse, ReasonSettlingFailures}}}
	failed := passWant{phase: paddlev1.PaddleJobFailed,
		conditions: map[string]wantCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonPodFailed}}}
	const rank0 = `pod c-worker-0: container "paddle" exited with code 1`
	for _, tc := range []settleCase{{
		name: "the retryable peer seen first: the job waits, then fails on the crash",
		job:  collective(),
		steps: []settleStep{
			{fail: map[string]exit{"worker-1": lostPeer}, clock: time.Second, want: settling},
			{fail: map[string]exit{"worker-0": crash}, clock: 3 * time.Second, want: failed, wantMsg: rank0},
		},
	}, {
		name: "the crash seen first: the job fails at once",
		job:  collective(),
		steps: []settleStep{
			{fail: map[string]exit{"worker-0": crash}, clock: 3 * time.Second,
				want: passWant{deleted: []string{"c-worker-1"}, phase: paddlev1.PaddleJobFailed,
					conditions: map[string]wantCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonPodFailed}}},
				wantMsg: rank0},
		},
	}, {
		name: "both seen in one pass, the peer's exit the earlier",
		job:  collective(),
		steps: []settleStep{
			{fail: map[string]exit{"worker-0": crash, "worker-1": lostPeer}, clock: 3 * time.Second, want: failed, wantMsg: rank0},
		},
	}, {
		name: "both seen in one pass, the crash the earlier",
		job:  collective(),
		steps: []settleStep{
			{fail: map[string]exit{"worker-0": {code: 1}, "worker-1": {code: 250, after: 2 * time.Second}}, clock: 3 * time.Second, want: failed, wantMsg: rank0},
		},
	}} {
		t.Run(tc.name, tc.run)
	}
}

// Nothing restarts before the window has passed, and then what failed in
// it restarts once, named after the pod whose container finished first
// (not the first in role order); a failure after the window is not part
// of the decision.
func TestFailuresSettleBeforeARestart(t *testing.T) {
	psJob := func() *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("wd", "ns").UID("wd-uid").PS(2).Workers(2).
			RolePolicy(paddlev1.ReplicaPS, paddlev1.RestartPolicyExitCode).
			RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyExitCode).
			Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning}).Obj()
	}
	settling := func(left time.Duration) passWant {
		return passWant{requeue: left, phase: paddlev1.PaddleJobStarting,
			conditions: map[string]wantCondition{paddlev1.JobRunning: {metav1.ConditionFalse, ReasonSettlingFailures}}}
	}
	restartAll := passWant{deleted: []string{"wd-ps-0", "wd-ps-1", "wd-worker-0", "wd-worker-1"},
		conditions: map[string]wantCondition{paddlev1.JobRestarting: {metav1.ConditionTrue, ReasonPodFailed}}}
	for _, tc := range []settleCase{{
		name: "a crash waits out the window, then the whole job restarts once",
		job:  psJob(),
		steps: []settleStep{
			{fail: map[string]exit{"ps-1": {code: 139}}, clock: time.Second, want: settling(9 * time.Second)},
			{clock: 9*time.Second + 999*time.Millisecond, want: settling(time.Millisecond)},
			{clock: 10 * time.Second, want: restartAll,
				wantMsg: `restart 1 (backoffLimit 6), restarting all 4 pods of the job after pod wd-ps-1: container "paddle" exited with code 139`},
		},
	}, {
		name: "the restart names the pod that failed first, whatever its role",
		job:  psJob(),
		steps: []settleStep{
			{fail: map[string]exit{"worker-1": {code: 137}}, clock: time.Second, want: settling(9 * time.Second)},
			{fail: map[string]exit{"ps-0": {code: 139, after: 3 * time.Second}}, clock: 4 * time.Second, want: settling(6 * time.Second)},
			{clock: 10 * time.Second, want: restartAll, wantMsg: "after pod wd-worker-1:"},
		},
	}, {
		name: "a failure after the window is not judged with the set",
		job:  psJob(),
		steps: []settleStep{
			// Seen only late, with a crash 11 s after the first failure:
			// the set is worker-1's alone, which restarts the job.
			{fail: map[string]exit{"worker-1": {code: 137}, "worker-0": {code: 1, after: 11 * time.Second}}, clock: 12 * time.Second,
				want: restartAll, wantMsg: "after pod wd-worker-1:"},
		},
	}, {
		name: "a failure within the window that is not retryable fails the job",
		job:  psJob(),
		steps: []settleStep{
			{fail: map[string]exit{"worker-1": {code: 137}, "worker-0": {code: 1, after: 9 * time.Second}}, clock: 12 * time.Second,
				want: passWant{deleted: []string{"wd-ps-0", "wd-ps-1"}, phase: paddlev1.PaddleJobFailed,
					conditions: map[string]wantCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonPodFailed}}},
				wantMsg: `pod wd-worker-0: container "paddle" exited with code 1`},
		},
	}} {
		t.Run(tc.name, tc.run)
	}
}

// The set and its order: by when each pod's first failed container
// finished, ties in role and index order; a pod without an exit code by its
// conditions' latest change.
func TestSettleFailures(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(3).Obj()
	failedAfter := func(rt paddlev1.ReplicaType, i int, after time.Duration) *corev1.Pod {
		return testutil.MakePod(job, rt, i).Failed("paddle", 137).FinishedAt(t0.Add(after)).Obj()
	}
	evicted := testutil.MakePod(job, paddlev1.ReplicaWorker, 2).Obj()
	evicted.Status.Phase, evicted.Status.Reason = corev1.PodFailed, "Evicted"
	evicted.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0.Add(4 * time.Second))},
	}
	failed := []*corev1.Pod{
		failedAfter(paddlev1.ReplicaPS, 0, 2*time.Second),
		failedAfter(paddlev1.ReplicaWorker, 0, 2*time.Second),
		failedAfter(paddlev1.ReplicaWorker, 1, 0),
		evicted,
		failedAfter(paddlev1.ReplicaWorker, 3, 10*time.Second), // one window after the first: a later set
	}
	for _, tc := range []struct {
		now      time.Duration
		wantWait time.Duration
	}{{3 * time.Second, 7 * time.Second}, {10 * time.Second, 0}, {time.Hour, 0}} {
		set := settleFailures(failed, t0.Add(tc.now), 10*time.Second)
		if got, want := strings.Join(podNames(set.pods), " "), "j-worker-1 j-ps-0 j-worker-0 j-worker-2"; got != want {
			t.Errorf("at t0+%s: the set is %s, want %s", tc.now, got, want)
		}
		if set.wait != tc.wantWait || !set.first.Equal(t0) {
			t.Errorf("at t0+%s: first %s, wait %s; want t0 and %s", tc.now, set.first, set.wait, tc.wantWait)
		}
	}
	if set := settleFailures(nil, t0, 10*time.Second); len(set.pods) != 0 || set.wait != 0 {
		t.Errorf("no failures make a set: %+v", set)
	}
}
