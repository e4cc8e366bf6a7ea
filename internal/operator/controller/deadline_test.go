package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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
