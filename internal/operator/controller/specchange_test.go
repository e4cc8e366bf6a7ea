package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// Without the webhook, a running job's spec can change under its pods: the
// missing pod is made only if its spec is the live pods'.
func TestSpecChangeWhileRunningPass(t *testing.T) {
	start := metav1.NewTime(t0.Add(-time.Minute))
	started := func() *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("sc", "ns").UID("sc-uid").Workers(2).
			Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, StartTime: &start}).Obj()
	}
	// worker-0 lives, made from the started job's spec (recorded or not);
	// worker-1 is missing.
	livePod := func(made *paddlev1.PaddleJob, recorded bool) *corev1.Pod {
		w := testutil.MakePod(made, paddlev1.ReplicaWorker, 0).Running("10.0.0.1")
		if recorded {
			w = w.Annotation(paddlev1.AnnotationSpecHash, specHashes(&made.Spec)[paddlev1.ReplicaWorker])
		}
		return w.Obj()
	}
	tests := []struct {
		name     string
		edit     func(*paddlev1.PaddleJob)
		recorded bool
		want     passWant
		wantMsg  string
	}{
		{name: "an unchanged spec makes the missing pod", edit: func(*paddlev1.PaddleJob) {}, recorded: true,
			want: passWant{created: []string{"sc-worker-1"}, requeue: expectationTimeout}},
		{name: "a scale-up is no spec change", edit: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Replicas = 3 }, recorded: true,
			want: passWant{created: []string{"sc-worker-1", "sc-worker-2"}, requeue: expectationTimeout}},
		{name: "a changed template makes nothing", recorded: true,
			edit: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Template.Spec.Containers[0].Image = "other:v2" },
			want: passWant{phase: paddlev1.PaddleJobPending, conditions: map[string]wantCondition{
				paddlev1.JobCreated: {metav1.ConditionFalse, ReasonSpecChanged}}},
			wantMsg: "spec.worker.template changed while the job's pods run"},
		{name: "a changed intranet makes nothing", recorded: true,
			edit: func(j *paddlev1.PaddleJob) { j.Spec.Intranet = paddlev1.IntranetService },
			want: passWant{phase: paddlev1.PaddleJobPending, conditions: map[string]wantCondition{
				paddlev1.JobCreated: {metav1.ConditionFalse, ReasonSpecChanged}}},
			wantMsg: "spec.intranet, spec.withGloo or spec.schedulingPolicy changed"},
		{name: "pods of an operator that recorded nothing are trusted",
			edit: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Template.Spec.Containers[0].Image = "other:v2" },
			want: passWant{created: []string{"sc-worker-1"}, requeue: expectationTimeout}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			made := started()
			job := made.DeepCopy()
			tc.edit(job)
			f := newFixture(t, Options{}, objects(job, livePod(made, tc.recorded))...)
			got := f.reconcile(t, job)
			tc.want.check(t, got)
			if tc.wantMsg != "" {
				if c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobCreated); c == nil || !strings.Contains(c.Message, tc.wantMsg) {
					t.Errorf("Created condition %+v does not say %q", c, tc.wantMsg)
				}
			}
			for name, p := range got.pods {
				if name != "sc-worker-0" && p.Annotations[paddlev1.AnnotationSpecHash] != specHashes(&job.Spec)[paddlev1.ReplicaWorker] {
					t.Errorf("%s records %q, not the spec it was made from", name, p.Annotations[paddlev1.AnnotationSpecHash])
				}
			}
		})
	}
}
