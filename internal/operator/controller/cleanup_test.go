package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestCleanPodPolicy(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").PS(1).Workers(2).Obj()
	pods := map[string]*corev1.Pod{}
	var all []*corev1.Pod
	for _, p := range []struct {
		name  string
		state func(*testutil.PodWrapper) *testutil.PodWrapper
	}{
		{"wd-ps-0", func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Running("10.0.0.1") }},
		{"wd-worker-0", func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Succeeded() }},
		{"wd-worker-1", func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Failed("paddle", 3) }},
	} {
		pod := p.state(testutil.WrapPod(&corev1.Pod{})).Obj()
		pod.Name = p.name
		pods[p.name] = pod
		all = append(all, pod)
	}

	tests := []struct {
		policy paddlev1.CleanPodPolicy
		alias  paddlev1.CleanPodPolicy
		phase  paddlev1.PaddleJobPhase
		want   []string
	}{
		// Running pods are stopped whatever the policy; terminated ones as the policy says.
		{policy: paddlev1.CleanPodPolicyNever, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0"}},
		{policy: paddlev1.CleanPodPolicyNever, phase: paddlev1.PaddleJobFailed, want: []string{"wd-ps-0"}},
		{policy: paddlev1.CleanPodPolicyAlways, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
		{policy: paddlev1.CleanPodPolicyAlways, phase: paddlev1.PaddleJobFailed, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
		{policy: paddlev1.CleanPodPolicyOnCompletion, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
		{policy: paddlev1.CleanPodPolicyOnCompletion, phase: paddlev1.PaddleJobFailed, want: []string{"wd-ps-0"}},
		{policy: paddlev1.CleanPodPolicyOnFailure, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0"}},
		{policy: paddlev1.CleanPodPolicyOnFailure, phase: paddlev1.PaddleJobFailed, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
		// Unset means Never; the deprecated cleanPolicy alias counts when cleanPodPolicy is unset.
		{phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0"}},
		{alias: paddlev1.CleanPodPolicyOnCompletion, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
	}
	for _, tc := range tests {
		j := job.DeepCopy()
		j.Spec.CleanPodPolicy, j.Spec.CleanPolicy = tc.policy, tc.alias
		j.Status.Phase = tc.phase
		var got []string
		for _, p := range podsToDeleteWhenFinished(j, all) {
			got = append(got, p.Name)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("policy %q (alias %q), job %s (-want +got):\n%s", tc.policy, tc.alias, tc.phase, diff)
		}
	}
}

func TestTTL(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := testutil.MakePaddleJob("j", "ns").Workers(1).Obj()
	start := metav1.NewTime(t0)
	job.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
	if expired, left := ttlExpired(job, t0); expired || left != 0 {
		t.Errorf("an unfinished job has no TTL: %v %s", expired, left)
	}
	job.Status.CompletionTime = &start
	if expired, left := ttlExpired(job, t0.Add(59*time.Second)); expired || left != time.Second {
		t.Errorf("1 s before the TTL: %v %s", expired, left)
	}
	if expired, _ := ttlExpired(job, t0.Add(time.Minute)); !expired {
		t.Error("the TTL did not expire at 60 s")
	}
}

func TestFinishedJobPass(t *testing.T) {
	completed := func() *testutil.JobWrapper {
		return testutil.MakePaddleJob("done", "ns").UID("done-uid").PS(1).Workers(1).
			Status(finishedStatus(paddlev1.PaddleJobCompleted, 10*time.Second))
	}
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		want passWant
	}{
		{
			name: "Never stops the running pserver and keeps the finished worker",
			job:  completed().CleanPodPolicy(paddlev1.CleanPodPolicyNever).Obj(),
			want: passWant{deleted: []string{"done-ps-0"}},
		},
		{
			name: "Always deletes every pod",
			job:  completed().CleanPodPolicy(paddlev1.CleanPodPolicyAlways).Obj(),
			want: passWant{deleted: []string{"done-ps-0", "done-worker-0"}},
		},
		{
			name: "OnFailure keeps a completed job's finished pods",
			job:  completed().CleanPodPolicy(paddlev1.CleanPodPolicyOnFailure).Obj(),
			want: passWant{deleted: []string{"done-ps-0"}},
		},
		{
			name: "the deprecated cleanPolicy alias applies when cleanPodPolicy is unset",
			job: func() *paddlev1.PaddleJob {
				j := completed().Obj()
				j.Spec.CleanPolicy = paddlev1.CleanPodPolicyOnCompletion
				return j
			}(),
			want: passWant{deleted: []string{"done-ps-0", "done-worker-0"}},
		},
		{
			name: "before its TTL the job stays and comes back when it ends",
			job:  completed().TTLSecondsAfterFinished(60).Obj(),
			want: passWant{deleted: []string{"done-ps-0"}, requeue: 50 * time.Second},
		},
		{
			name: "past its TTL the job is deleted",
			job:  completed().TTLSecondsAfterFinished(5).Obj(),
			want: passWant{deleted: []string{"done-ps-0"}, jobDeleted: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := testutil.MakePod(tc.job, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj()
			worker := testutil.MakePod(tc.job, paddlev1.ReplicaWorker, 0).Succeeded().Obj()
			f := newFixture(t, Options{}, objects(tc.job, ps, worker)...)
			got := f.reconcile(t, tc.job)
			tc.want.phase = paddlev1.PaddleJobCompleted
			tc.want.check(t, got)
		})
	}
}

// The pass that finishes a job writes its status and stops nothing: its
// pods could leave the cache before the status reaches it, and a pass in
// between would see an unfinished job without pods. A pass that still sees
// the job unfinished decides the same again; the first that sees it
// finished stops its pods.
func TestFinishingPassLeavesThePodsToTheNext(t *testing.T) {
	start := metav1.NewTime(t0.Add(-25 * time.Second))
	running := paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, StartTime: &start}
	job := testutil.MakePaddleJob("fin", "ns").UID("fin-uid").Workers(1).Status(running).Obj()
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
	job.Spec.Intranet = paddlev1.IntranetService // no endpoints to wait for
	pod := testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Scheduled("n").Running("10.0.0.1").
		Annotation(paddlev1.AnnotationPorts, "23000-23002").Obj()
	f := newFixture(t, Options{}, objects(job, pod)...)
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(job)}
	podStays := func(when string) {
		t.Helper()
		p := &corev1.Pod{}
		if err := f.client.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil || p.UID != pod.UID || p.DeletionTimestamp != nil {
			t.Fatalf("%s: the worker is gone or terminating (%v)", when, err)
		}
	}

	if _, err := f.r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if !f.finished(t, job) {
		t.Fatal("the pass past the deadline did not fail the job")
	}
	podStays("after the finishing pass")

	// A pass from a cache that has not shown the status yet.
	stale := &paddlev1.PaddleJob{}
	if err := f.client.Get(ctx, req.NamespacedName, stale); err != nil {
		t.Fatal(err)
	}
	stale.Status = running
	if err := f.client.Status().Update(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if !f.finished(t, job) {
		t.Fatal("the pass from the stale job did not fail it again")
	}
	podStays("after a pass from the stale job")
	if n := len(f.pods(t, "ns")); n != 1 {
		t.Errorf("%d pods after a pass from the stale job, want the one worker", n)
	}

	want := passWant{deleted: []string{"fin-worker-0"}, phase: paddlev1.PaddleJobFailed}
	want.check(t, f.reconcile(t, job))
}
