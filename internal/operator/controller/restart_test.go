package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestEvaluateFailures(t *testing.T) {
	pod := func(name string, state func(*testutil.PodWrapper) *testutil.PodWrapper, restarts int32) *corev1.Pod {
		rt, idx := paddlev1.ReplicaWorker, 0
		fmt.Sscanf(name[len("j-worker-"):], "%d", &idx)
		job := testutil.MakePaddleJob("j", "ns").Workers(4).Obj()
		p := state(testutil.WrapPod(newPod(job, rt, idx, portRange{23000, 3}, podOptions{}))).Obj()
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
	tests := []struct {
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
	}{{
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
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("j", "ns").Workers(4).Obj()
			job.Spec.Worker.RestartPolicy = tc.policy
			job.Spec.Worker.RetryableExitCodes = tc.retryable
			job.Spec.BackoffLimit = &tc.backoffLimit
			job.Status.RestartCount = tc.recorded
			job.Status.RecreatingPods = tc.counted
			f := evaluateFailures(job, tc.pods)
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
		})
	}
}

func TestEffectiveRestartPolicy(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj()
	if got := job.Spec.EffectiveRestartPolicy(paddlev1.ReplicaWorker); got != paddlev1.RestartPolicyNever {
		t.Errorf("default = %s, want Never", got)
	}
	job.Spec.Worker.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	if got := job.Spec.EffectiveRestartPolicy(paddlev1.ReplicaWorker); got != paddlev1.RestartPolicyOnFailure {
		t.Errorf("template OnFailure = %s", got)
	}
	job.Spec.Worker.Template.Spec.RestartPolicy = ""
	job.Spec.Elastic = ptr.To[int32](1)
	if got := job.Spec.EffectiveRestartPolicy(paddlev1.ReplicaWorker); got != paddlev1.RestartPolicyOnFailure {
		t.Errorf("elastic workers = %s, want OnFailure", got)
	}
	if got := job.Spec.EffectiveRestartPolicy(paddlev1.ReplicaPS); got != paddlev1.RestartPolicyNever {
		t.Errorf("elastic pservers = %s, want Never", got)
	}
	job.Spec.Worker.RestartPolicy = paddlev1.RestartPolicyExitCode
	pod := newPod(job, paddlev1.ReplicaWorker, 0, portRange{23000, 3}, podOptions{})
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

func TestRestartPass(t *testing.T) {
	onFailure := func() *testutil.JobWrapper {
		return testutil.MakePaddleJob("rs", "ns").UID("rs-uid").Workers(2).RestartPolicy(paddlev1.ReplicaWorker, corev1.RestartPolicyOnFailure)
	}
	restarted := func(count int32, ago time.Duration) paddlev1.PaddleJobStatus {
		at := metav1.NewMicroTime(t0.Add(-ago))
		return paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, RestartCount: count, LastRestartTime: &at}
	}
	tests := []struct {
		name       string
		job        *paddlev1.PaddleJob
		pods       func(*paddlev1.PaddleJob) []*corev1.Pod
		want       passWant
		wantStatus func(*testing.T, paddlev1.PaddleJobStatus)
	}{
		{
			name: "a worker failing under OnFailure is counted, then deleted",
			job:  onFailure().Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Failed("paddle", 137).Obj(),
				}
			},
			want: passWant{deleted: []string{"rs-worker-1"}},
			wantStatus: func(t *testing.T, st paddlev1.PaddleJobStatus) {
				if st.RestartCount != 1 || !slices.Equal(st.RecreatingPods, []string{"rs-worker-1-uid"}) || st.LastRestartTime == nil || !st.LastRestartTime.Equal(ptr.To(metav1.NewMicroTime(t0))) {
					t.Errorf("restart not recorded ahead: count %d, recreating %v, last %v", st.RestartCount, st.RecreatingPods, st.LastRestartTime)
				}
			},
		},
		{
			name: "the replacement waits for the restart backoff",
			job:  onFailure().Status(restarted(1, 2*time.Second)).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj()}
			},
			want: passWant{requeue: 3 * time.Second, phase: paddlev1.PaddleJobPending,
				conditions: map[string]wantCondition{paddlev1.JobRunning: {metav1.ConditionFalse, ReasonRestartBackoff}}},
		},
		{
			name: "after the backoff the replacement is created",
			job:  onFailure().Status(restarted(1, 6*time.Second)).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj()}
			},
			want: passWant{created: []string{"rs-worker-1"}, requeue: expectationTimeout},
		},
		{
			name: "a failure under Never fails the job and stops its other pods",
			job:  testutil.MakePaddleJob("rs", "ns").UID("rs-uid").Workers(2).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Failed("paddle", 1).Obj(),
				}
			},
			want: passWant{deleted: []string{"rs-worker-0"}, phase: paddlev1.PaddleJobFailed,
				conditions: map[string]wantCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonPodFailed}}},
		},
		{
			name: "a restart past backoffLimit fails the job",
			job:  onFailure().BackoffLimit(1).Status(restarted(1, time.Minute)).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Failed("paddle", 137).Obj(),
				}
			},
			want: passWant{deleted: []string{"rs-worker-0"}, phase: paddlev1.PaddleJobFailed,
				conditions: map[string]wantCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonBackoffLimitExceeded}}},
		},
		{
			name: "a pod counted already is only deleted, not counted again",
			job: onFailure().Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, RestartCount: 1,
				RecreatingPods: []string{"rs-worker-1-uid"}, LastRestartTime: ptr.To(metav1.NewMicroTime(t0))}).Obj(),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Failed("paddle", 137).Obj(),
				}
			},
			want: passWant{deleted: []string{"rs-worker-1"}},
			wantStatus: func(t *testing.T, st paddlev1.PaddleJobStatus) {
				if st.RestartCount != 1 {
					t.Errorf("restart count %d, want 1: the failure was counted before", st.RestartCount)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{}, objects(tc.job, tc.pods(tc.job)...)...)
			got := f.reconcile(t, tc.job)
			tc.want.check(t, got)
			if tc.wantStatus != nil {
				tc.wantStatus(t, got.job.Status)
			}
		})
	}
}
