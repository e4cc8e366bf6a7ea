package dashboard

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestRowOf(t *testing.T) {
	created := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	reported := metav1.NewTime(created.Add(5 * time.Minute))
	i32 := func(v int32) *int32 { return &v }
	i64 := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		job  *paddlev1.PaddleJob
		want string
	}{{
		name: "submitted: no status yet, ready counts from the spec",
		job:  testutil.MakePaddleJob("wd", "ns").PS(2).Workers(3).Obj(),
		want: `{"namespace":"ns","name":"wd","phase":"Submitted","mode":"PS","roles":[{"role":"ps","ready":"0/2","replicas":2,"running":0},{"role":"worker","ready":"0/3","replicas":3,"running":0}],"restarts":0,"created":"2026-11-25T10:00:00Z"}`,
	}, {
		name: "running with progress: restarts of the job and of its pods add up",
		job: testutil.MakePaddleJob("wd", "ns").PS(1).Workers(2).Status(paddlev1.PaddleJobStatus{
			Phase: paddlev1.PaddleJobRunning, Mode: paddlev1.PaddleJobModePS, RestartCount: 2,
			PS:     &paddlev1.ReplicaStatus{Running: 1, Ready: "1/1"},
			Worker: &paddlev1.ReplicaStatus{Running: 2, Ready: "2/2", Restarts: 3},
			Progress: &paddlev1.JobProgress{Percent: i32(40), EstimatedSecondsRemaining: i64(90), Epoch: i64(2), TotalEpochs: i64(5),
				Metrics: []paddlev1.ProgressMetric{{Name: "auc", Value: "0.71"}, {Name: "loss", Value: "0.5"}}, LastUpdateTime: &reported},
		}).Obj(),
		want: `{"namespace":"ns","name":"wd","phase":"Running","mode":"PS","roles":[{"role":"ps","ready":"1/1","replicas":1,"running":1},{"role":"worker","ready":"2/2","replicas":2,"running":2}],"restarts":5,"percent":40,"etaSeconds":90,"progressTime":"2026-11-25T10:05:00Z","epoch":2,"totalEpochs":5,"metric":{"name":"auc","value":"0.71"},"created":"2026-11-25T10:00:00Z"}`,
	}, {
		name: "failed: the reason says why",
		job: testutil.MakePaddleJob("c", "ns").Workers(1).Status(paddlev1.PaddleJobStatus{
			Phase: paddlev1.PaddleJobFailed, Mode: paddlev1.PaddleJobModeSingle,
			Conditions: []metav1.Condition{
				{Type: paddlev1.JobRunning, Status: "False", Reason: "PodFailed"},
				{Type: paddlev1.JobFailed, Status: "True", Reason: "BackoffLimitExceeded"},
			},
		}).Obj(),
		want: `{"namespace":"ns","name":"c","phase":"Failed","mode":"Single","roles":[{"role":"worker","ready":"0/1","replicas":1,"running":0}],"restarts":0,"created":"2026-11-25T10:00:00Z","reason":"BackoffLimitExceeded"}`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			c.job.CreationTimestamp = metav1.NewTime(created)
			got, err := json.Marshal(rowOf(c.job))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("row\n got %s\nwant %s", got, c.want)
			}
		})
	}
}
