package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestSuspendPass(t *testing.T) {
	start := metav1.NewTime(t0.Add(-time.Minute))
	hostPorts := []paddlev1.HostPortRange{{Pod: "sp-worker-0", Ports: "24000-24002"}}
	running := paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, StartTime: &start, HostPorts: hostPorts}
	suspended := paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobSuspended, HostPorts: hostPorts,
		Conditions: []metav1.Condition{{Type: paddlev1.JobSuspended, Status: metav1.ConditionTrue, Reason: ReasonSuspended, LastTransitionTime: start}}}
	job := func(suspend bool, st paddlev1.PaddleJobStatus) *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("sp", "ns").UID("sp-uid").Workers(2).Intranet(paddlev1.IntranetService).Suspend(suspend).Status(st).Obj()
	}
	runPassCases(t, []passCase{
		{
			name: "suspending deletes the pods and keeps the host ports",
			job:  job(true, running),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Running("10.0.0.2").Obj(),
				}
			},
			want: passWant{deleted: []string{"sp-worker-0", "sp-worker-1"}, phase: paddlev1.PaddleJobSuspended,
				conditions: map[string]wantCondition{
					paddlev1.JobSuspended: {metav1.ConditionTrue, ReasonSuspended},
					paddlev1.JobRunning:   {metav1.ConditionFalse, ReasonSuspended},
				}},
			check: checkStatus(func(t *testing.T, st paddlev1.PaddleJobStatus) {
				if st.StartTime != nil {
					t.Errorf("start time %v kept: the deadline must count from the resume", st.StartTime)
				}
				if len(st.HostPorts) != 1 || st.HostPorts[0] != hostPorts[0] {
					t.Errorf("host ports %v, want %v kept for the resume", st.HostPorts, hostPorts)
				}
			}),
		},
		{
			name: "a pod already being deleted is not deleted again",
			job:  job(true, suspended),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Terminating().Obj()}
			},
			want: passWant{phase: paddlev1.PaddleJobSuspended},
		},
		{
			name: "resuming creates the pods",
			job:  job(false, suspended),
			pods: func(*paddlev1.PaddleJob) []*corev1.Pod { return nil },
			want: passWant{created: []string{"sp-worker-0", "sp-worker-1"}, requeue: expectationTimeout},
		},
		{
			name: "the first pass that sees the resumed pods records the resume",
			job:  job(false, suspended),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Pending("").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Pending("").Obj(),
				}
			},
			want: passWant{phase: paddlev1.PaddleJobStarting,
				conditions: map[string]wantCondition{paddlev1.JobSuspended: {metav1.ConditionFalse, ReasonResumed}}},
			check: checkStatus(func(t *testing.T, st paddlev1.PaddleJobStatus) {
				if st.StartTime == nil || !st.StartTime.Time.Equal(t0) {
					t.Errorf("start time %v, want the resume's %v", st.StartTime, t0)
				}
			}),
		},
	})
}

// Each condition's transition is an event of its own: the status keeps
// only the latest of each, and the dashboard's timeline reads them all.
func TestSuspendingRecordsEachTransition(t *testing.T) {
	start := metav1.NewTime(t0.Add(-time.Minute))
	job := testutil.MakePaddleJob("sp", "ns").UID("sp-uid").Workers(1).Suspend(true).Status(paddlev1.PaddleJobStatus{
		Phase: paddlev1.PaddleJobRunning, StartTime: &start,
		Conditions: []metav1.Condition{{Type: paddlev1.JobRunning, Status: metav1.ConditionTrue, Reason: ReasonAllPodsRunning, LastTransitionTime: start}},
	}).Obj()
	f := newFixture(t, Options{}, objects(job, testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj())...)
	f.reconcile(t, job)
	ev := drainEvents(f)
	for _, want := range []string{"Normal ConditionChanged Suspended=True at generation", "Normal ConditionChanged Running=False at generation"} {
		if !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("no event %q among %q", want, ev)
		}
	}
	f.reconcile(t, job)
	if again := drainEvents(f); slices.ContainsFunc(again, func(e string) bool { return strings.Contains(e, "ConditionChanged") }) {
		t.Errorf("a pass that changed no condition recorded %q", again)
	}
}
