package dashboard

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestRestartTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	event := func(reason string, first, last int) corev1.Event {
		return corev1.Event{Reason: reason, FirstTimestamp: metav1.NewTime(at(first)), LastTimestamp: metav1.NewTime(at(last))}
	}
	for _, c := range []struct {
		name   string
		status paddlev1.PaddleJobStatus
		events []corev1.Event
		want   []int
	}{{
		name: "never restarted",
		want: []int{},
	}, {
		name:   "the status alone: the latest restart",
		status: paddlev1.PaddleJobStatus{RestartCount: 3, LastRestartTime: &metav1.MicroTime{Time: at(300)}},
		want:   []int{300},
	}, {
		name: "events give the earlier ones; the status, the condition and the event of one restart are one mark",
		status: paddlev1.PaddleJobStatus{
			LastRestartTime: &metav1.MicroTime{Time: at(300).Add(200 * time.Millisecond)},
			Conditions:      []metav1.Condition{{Type: paddlev1.JobRestarting, Status: "True", LastTransitionTime: metav1.NewTime(at(300))}},
		},
		events: []corev1.Event{event("RestartingJob", 100, 100), event("RestartingJob", 300, 300), event("SuccessfulCreatePod", 50, 310)},
		want:   []int{100, 300},
	}, {
		name:   "an aggregated event: its first and last time",
		events: []corev1.Event{event("RestartingPod", 100, 250)},
		want:   []int{100, 250},
	}, {
		name:   "a Restarting condition back to False marks nothing by itself",
		status: paddlev1.PaddleJobStatus{Conditions: []metav1.Condition{{Type: paddlev1.JobRestarting, Status: "False", LastTransitionTime: metav1.NewTime(at(400))}}},
		want:   []int{},
	}} {
		t.Run(c.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("wd", "ns").Workers(1).Status(c.status).Obj()
			got := restartTimes(job, c.events)
			var secs []int
			for _, g := range got {
				secs = append(secs, int(g.Sub(t0).Seconds()))
			}
			if len(secs) != len(c.want) {
				t.Fatalf("restarts at %v s, want %v", secs, c.want)
			}
			for i := range secs {
				if secs[i] != c.want[i] {
					t.Fatalf("restarts at %v s, want %v", secs, c.want)
				}
			}
		})
	}
}
