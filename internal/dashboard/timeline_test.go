package dashboard

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/transition"
)

// transitionEvent is the operator's event of a condition's transition.
func transitionEvent(job *paddlev1.PaddleJob, name, cond string, status metav1.ConditionStatus, reason string, at time.Time) *corev1.Event {
	e := jobEvent(job, name, transition.Reason, at)
	e.Message = transition.Note(metav1.Condition{Type: cond, Status: status, Reason: reason, Message: reason + " message"}, 2, 0)
	return e
}

func podEvent(ns, pod, name, reason, msg string, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod, Namespace: ns},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: msg,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
	}
}

// The job's page gets every transition of its conditions and every restart
// from the operator's events, merged with its status (the latest transition
// of each, once); its suspensions, the latest still open; the events of its
// pods, not another job's; and a pending pod's reason, the scheduler's.
func TestJobStreamShowsTheTimelineAndThePodsEvents(t *testing.T) {
	t0 := time.Now().Add(-20 * time.Minute).Truncate(time.Second)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	job := testutil.MakePaddleJob("ts", "ns").UID("uid-ts").Workers(1).Suspend(true).Status(paddlev1.PaddleJobStatus{
		Phase: paddlev1.PaddleJobSuspended,
		Conditions: []metav1.Condition{
			{Type: paddlev1.JobRunning, Status: "False", Reason: "Suspended", LastTransitionTime: metav1.NewTime(at(9))},
			{Type: paddlev1.JobSuspended, Status: "True", Reason: "Suspended", LastTransitionTime: metav1.NewTime(at(9))},
		},
	}).Obj()
	pending := testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Pending("").Obj()
	pending.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/1 nodes are available: 1 Insufficient memory."}}
	f := newFixture(t, fixtureOptions{}, job, pending,
		transitionEvent(job, "c1", paddlev1.JobRunning, "True", "AllPodsRunning", at(1)),
		jobEvent(job, "r1", "RestartingJob", at(3)),
		transitionEvent(job, "c2", paddlev1.JobSuspended, "True", "Suspended", at(5)),
		transitionEvent(job, "c3", paddlev1.JobSuspended, "False", "Resumed", at(7)),
		// The status's latest transition, its event a moment later.
		transitionEvent(job, "c4", paddlev1.JobSuspended, "True", "Suspended", at(9).Add(300*time.Millisecond)),
		podEvent("ns", "ts-worker-0", "p1", "FailedScheduling", "0/1 nodes are available", at(10)),
		podEvent("ns", "other-worker-0", "p2", "FailedScheduling", "not ts's", at(10)))
	s := f.stream(t, "/api/namespaces/ns/jobs/ts/stream")

	var v JobView
	s.waitFor(t, "job", &v, func() bool { return v.Exists })
	var got []string
	for _, e := range v.Timeline {
		got = append(got, fmt.Sprintf("%d %s=%s %s", int(e.Time.Sub(t0).Minutes()), e.Type, e.Status, e.Reason))
	}
	want := []string{"1 Running=True AllPodsRunning", "3 Restart= RestartingJob", "5 Suspended=True Suspended",
		"7 Suspended=False Resumed", "9 Running=False Suspended", "9 Suspended=True Suspended"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("timeline\n %q, want\n %q", got, want)
	}
	if n := len(v.Suspensions); n != 2 || !v.Suspensions[0].From.Equal(at(5)) || !v.Suspensions[0].To.Equal(at(7)) ||
		v.Suspensions[1].To != nil || v.Suspensions[1].From.Sub(at(9)).Abs() > time.Second {
		t.Errorf("suspensions %+v, want 5 to 7 and since 9 minutes", v.Suspensions)
	}
	if len(v.Pods) != 1 || v.Pods[0].Reason != "Unschedulable" || v.Pods[0].Message != "0/1 nodes are available: 1 Insufficient memory." {
		t.Errorf("pending pod %+v, want the scheduler's reason", v.Pods)
	}

	var events []EventRow
	s.waitFor(t, "events", &events, func() bool { return true })
	var pods []string
	for _, e := range events {
		if e.Object != "" {
			pods = append(pods, e.Object+" "+e.Reason)
		}
	}
	if !reflect.DeepEqual(pods, []string{"ts-worker-0 FailedScheduling"}) {
		t.Errorf("pods' events %q, want ts-worker-0's only", pods)
	}
}
