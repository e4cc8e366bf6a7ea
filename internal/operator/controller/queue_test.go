package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// heldBy is a Queue holding the jobs it names, saying why.
type heldBy map[string]string

func (q heldBy) Hold(_ context.Context, job *paddlev1.PaddleJob) (string, error) {
	return q[job.Name], nil
}

func (q heldBy) Watched() []client.Object { return nil }

// The reconciler knows a queue only by its holds: a held job has no pods
// and is Queued, saying why; a job the queue lets go runs as its
// spec.suspend says.
func TestQueueHolds(t *testing.T) {
	queued := func(suspend bool) *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("q", "ns").UID("q-uid").Workers(2).Queue("team-a").Suspend(suspend).Obj()
	}
	const why = "waiting in Kueue LocalQueue team-a for admission"
	tests := []struct {
		name  string
		job   *paddlev1.PaddleJob
		queue Queue
		pods  bool // the job's pods run
		want  passWant
	}{
		{"a held suspended job is Queued", queued(true), heldBy{"q": why}, false,
			passWant{phase: paddlev1.PaddleJobQueued, conditions: map[string]wantCondition{paddlev1.JobSuspended: {metav1.ConditionTrue, ReasonQueued}}}},
		{"a held running job (evicted) loses its pods at once", queued(false), heldBy{"q": why}, true,
			passWant{deleted: []string{"q-worker-0", "q-worker-1"}, phase: paddlev1.PaddleJobQueued}},
		{"a job the queue lets go runs", queued(false), heldBy{}, false,
			passWant{created: []string{"q-worker-0", "q-worker-1"}, requeue: expectationTimeout}},
		{"without a queue (--kueue=off) the label means nothing", queued(false), nil, false,
			passWant{created: []string{"q-worker-0", "q-worker-1"}, requeue: expectationTimeout}},
		{"a suspended job the queue lets go is merely Suspended", queued(true), heldBy{}, false,
			passWant{phase: paddlev1.PaddleJobSuspended, conditions: map[string]wantCondition{paddlev1.JobSuspended: {metav1.ConditionTrue, ReasonSuspended}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{tt.job}
			if tt.pods {
				for i := range 2 {
					objs = append(objs, testutil.MakePod(tt.job, paddlev1.ReplicaWorker, i).Running("10.0.0.1").Obj())
				}
			}
			f := newFixture(t, Options{}, objs...)
			f.r.Queue = tt.queue
			got := f.reconcile(t, tt.job)
			tt.want.check(t, got)
			if c := findCondition(got.job, paddlev1.JobSuspended); tt.want.phase == paddlev1.PaddleJobQueued && c.Message != why {
				t.Errorf("Suspended condition %q, want the queue's reason %q", c.Message, why)
			}
		})
	}
}

// A job another controller manages (MultiKueue in a manager cluster) is
// left alone, its queue not even asked: its status is mirrored from the
// cluster that runs it.
func TestJobManagedElsewhereIsLeftAlone(t *testing.T) {
	job := testutil.MakePaddleJob("remote", "ns").UID("r-uid").Workers(2).Queue("team-a").Suspend(false).ManagedBy(paddlev1.ManagedByMultiKueue).Obj()
	f := newFixture(t, Options{}, job)
	f.r.Queue = heldBy{"remote": "would be Queued"}
	got := f.reconcile(t, job)
	passWant{}.check(t, got)
	if got.job.Status.Phase != "" || len(got.job.Status.Conditions) != 0 {
		t.Errorf("status %+v written for a job MultiKueue manages", got.job.Status)
	}
	var pods corev1.PodList
	if err := f.client.List(context.Background(), &pods); err != nil || len(pods.Items) != 0 {
		t.Errorf("%d pods, %v: want none", len(pods.Items), err)
	}
}
