package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := testutil.MakePaddleJob("j", "ns").Workers(1).Obj()
	if exceeded, left := deadlineExceeded(job, t0); exceeded || left != 0 {
		t.Errorf("no deadline: %v %s", exceeded, left)
	}
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
	start := metav1.NewTime(t0)
	job.Status.StartTime = &start
	if exceeded, left := deadlineExceeded(job, t0.Add(15*time.Second)); exceeded || left != 5*time.Second {
		t.Errorf("5 s before the deadline: %v %s", exceeded, left)
	}
	if exceeded, _ := deadlineExceeded(job, t0.Add(20*time.Second)); !exceeded {
		t.Error("the deadline did not fire at 20 s")
	}
}

func TestDeadlinePass(t *testing.T) {
	started := func(ago time.Duration) paddlev1.PaddleJobStatus {
		start := metav1.NewTime(t0.Add(-ago))
		return paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, StartTime: &start}
	}
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		want passWant
	}{
		{
			name: "before the deadline the job comes back when it falls",
			job:  testutil.MakePaddleJob("dl", "ns").UID("dl-uid").Workers(1).Status(started(15 * time.Second)).Obj(),
			want: passWant{requeue: 5 * time.Second, phase: paddlev1.PaddleJobRunning},
		},
		{
			name: "past the deadline the job fails and its pods are stopped",
			job:  testutil.MakePaddleJob("dl", "ns").UID("dl-uid").Workers(1).Status(started(25 * time.Second)).Obj(),
			want: passWant{deleted: []string{"dl-worker-0"}, phase: paddlev1.PaddleJobFailed,
				conditions: map[string]wantCondition{paddlev1.JobFailed: {metav1.ConditionTrue, ReasonDeadlineExceeded}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.job.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
			tc.job.Spec.Intranet = paddlev1.IntranetService // no endpoints to wait for
			pod := testutil.MakePod(tc.job, paddlev1.ReplicaWorker, 0).Scheduled("n").Running("10.0.0.1").
				Annotation(paddlev1.AnnotationPorts, "23000-23002").Obj()
			f := newFixture(t, Options{}, objects(tc.job, pod)...)
			tc.want.check(t, f.reconcile(t, tc.job))
		})
	}
}

// A deadline past what a time.Duration holds never falls: it must not wrap
// negative and fail the job at once.
func TestDeadlineDoesNotOverflow(t *testing.T) {
	for _, secs := range []int64{9223372036, 9223372037, 1<<63 - 1} {
		job := testutil.MakePaddleJob("j", "ns").Workers(1).Obj()
		job.Spec.ActiveDeadlineSeconds = ptr.To(secs)
		start := metav1.NewTime(t0)
		job.Status.StartTime = &start
		if exceeded, left := deadlineExceeded(job, t0.Add(time.Second)); exceeded || left < 0 {
			t.Errorf("activeDeadlineSeconds %d: exceeded %v, %s left one second in", secs, exceeded, left)
		}
	}
}

// A job whose pods can never be created (here a quota refuses them) still
// meets its deadline: it counts from the job's start, not its first pod, and
// the create error is on the Created condition meanwhile.
func TestDeadlineCountsFromTheJobsStart(t *testing.T) {
	job := testutil.MakePaddleJob("dl", "ns").UID("dl-uid").Workers(2).Intranet(paddlev1.IntranetService).Obj()
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
	quota := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), errQuota)
		}
		return c.Create(ctx, obj, opts...)
	}}
	f := newFixtureWith(t, Options{}, quota, job)

	got := f.reconcile(t, job)
	if got.err == nil || len(got.created) > 0 {
		t.Fatalf("first pass: error %v, created %v; want the quota's error and no pod", got.err, got.created)
	}
	if got.job.Status.StartTime == nil || !got.job.Status.StartTime.Time.Equal(t0) {
		t.Fatalf("startTime %v, want %v: the job started when first seen", got.job.Status.StartTime, t0)
	}
	c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobCreated)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "exceeded quota") {
		t.Errorf("Created condition %+v does not surface the create error", c)
	}

	f.clock.Step(21 * time.Second)
	passWant{phase: paddlev1.PaddleJobFailed, conditions: map[string]wantCondition{
		paddlev1.JobFailed: {metav1.ConditionTrue, ReasonDeadlineExceeded},
	}}.check(t, f.reconcile(t, job))
}

var errQuota = errorString("exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10")

type errorString string

func (e errorString) Error() string { return string(e) }
