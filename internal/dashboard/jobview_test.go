package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	opprogress "github.com/paddlejob/paddlejob/internal/operator/progress"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func historyConfigMap(job *paddlev1.PaddleJob, h opprogress.History) *corev1.ConfigMap {
	data, _ := json.Marshal(h)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: opprogress.HistoryConfigMapName(job.Name), Namespace: job.Namespace,
			Labels:          map[string]string{opprogress.LabelHistoryOf: job.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))}},
		Data: map[string]string{opprogress.HistoryKey: string(data)},
	}
}

func jobEvent(job *paddlev1.PaddleJob, name, reason string, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: job.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "PaddleJob", Name: job.Name, Namespace: job.Namespace, UID: job.UID},
		Type:           corev1.EventTypeNormal, Reason: reason, Message: reason + " of " + job.Name,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
	}
}

// The job page gets the job with its conditions in time order, its pods,
// its events (not those of another job) and its metric history with the
// steps, and each again when it changes: a new history point arrives
// without the page asking.
func TestJobStreamShowsTheJobItsPodsEventsAndCurves(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	job := testutil.MakePaddleJob("wd", "ns").UID("uid-wd").PS(1).Workers(1).Status(paddlev1.PaddleJobStatus{
		Phase: paddlev1.PaddleJobRunning, Mode: paddlev1.PaddleJobModePS, RestartCount: 1,
		LastRestartTime: &metav1.MicroTime{Time: t0.Add(4 * time.Minute)},
		PS:              &paddlev1.ReplicaStatus{Running: 1, Ready: "1/1"}, Worker: &paddlev1.ReplicaStatus{Running: 1, Ready: "1/1"},
		Conditions: []metav1.Condition{
			{Type: paddlev1.JobRunning, Status: "True", Reason: "AllPodsRunning", LastTransitionTime: metav1.NewTime(t0.Add(5 * time.Minute))},
			{Type: paddlev1.JobCreated, Status: "True", Reason: "PodsCreated", LastTransitionTime: metav1.NewTime(t0)},
		},
	}).Obj()
	ps := testutil.MakePod(job, paddlev1.ReplicaPS, 0).Scheduled("node-1").Running("10.0.0.5").Obj()
	worker := testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Scheduled("node-1").Running("10.0.0.6").Obj()
	worker.Status.ContainerStatuses[0].RestartCount = 2
	other := testutil.MakePaddleJob("other", "ns").UID("uid-other").Workers(1).Obj()
	step := func(n int64) *int64 { return &n }
	hist := opprogress.History{Metrics: []opprogress.Series{
		{Name: "auc", Points: [][2]float64{{1.7e9, 0.5}, {1.7e9 + 60, 0.8}}, Steps: []*int64{step(0), step(100)}},
	}}
	f := newFixture(t, fixtureOptions{}, job, other, ps, worker,
		jobEvent(job, "e1", "SuccessfulCreatePod", t0), jobEvent(job, "e2", "RestartingJob", t0.Add(2*time.Minute)),
		jobEvent(other, "e3", "SuccessfulCreatePod", t0),
		historyConfigMap(job, hist))
	s := f.stream(t, "/api/namespaces/ns/jobs/wd/stream")

	var v JobView
	s.waitFor(t, "job", &v, func() bool { return v.Exists })
	checkRunningWDView(t, v, t0)

	var events []EventRow
	s.waitFor(t, "events", &events, func() bool { return true })
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	if !slices.Equal(reasons, []string{"SuccessfulCreatePod", "RestartingJob"}) {
		t.Errorf("events %v, want wd's two, oldest first", reasons)
	}

	var h opprogress.History
	s.waitFor(t, "history", &h, func() bool { return true })
	if len(h.Metrics) != 1 || len(h.Metrics[0].Points) != 2 || *h.Metrics[0].Steps[1] != 100 {
		t.Fatalf("history %+v", h)
	}

	// The operator writes the history again: the page gets the new point.
	hist.Metrics[0].Points = append(hist.Metrics[0].Points, [2]float64{1.7e9 + 120, 0.85})
	hist.Metrics[0].Steps = append(hist.Metrics[0].Steps, step(200))
	if _, err := f.cs.CoreV1().ConfigMaps("ns").Update(ctx, historyConfigMap(job, hist), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "history", &h, func() bool { return len(h.Metrics) == 1 && len(h.Metrics[0].Points) == 3 })

	// The job completes: its page says so without being asked.
	job.Status.Phase = paddlev1.PaddleJobCompleted
	if err := f.ctrl.Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "job", &v, func() bool { return v.Row.Phase == "Completed" })
}

// checkRunningWDView checks the view of the running job wd of
// TestJobStreamShowsTheJobItsPodsEventsAndCurves, created at t0: its phase
// and UID, its conditions in the order they happened, its two pods, and
// its restarts, the earlier one from its event (+2m), the latest from the
// status (+4m).
func checkRunningWDView(t *testing.T, v JobView, t0 time.Time) {
	t.Helper()
	if v.Row.Phase != "Running" || v.UID != "uid-wd" {
		t.Errorf("job %+v", v.Row)
	}
	var conds []string
	for _, c := range v.Conditions {
		conds = append(conds, c.Type)
	}
	if !slices.Equal(conds, []string{"Created", "Running"}) {
		t.Errorf("conditions %v, want in the order they happened", conds)
	}
	var pods []string
	for _, p := range v.Pods {
		pods = append(pods, fmt.Sprintf("%s %s %s %s restarts=%d", p.Name, p.State, p.Node, p.IP, p.Restarts))
	}
	if want := []string{"wd-ps-0 Running node-1 10.0.0.5 restarts=0", "wd-worker-0 Running node-1 10.0.0.6 restarts=2"}; !slices.Equal(pods, want) {
		t.Errorf("pods\n %v\nwant %v", pods, want)
	}
	if len(v.Restarts) != 2 || !v.Restarts[0].Equal(t0.Add(2*time.Minute)) || !v.Restarts[1].Equal(t0.Add(4*time.Minute)) {
		t.Errorf("restarts %v, want at +2m (event) and +4m (status)", v.Restarts)
	}
}

// A job that does not exist yet is shown as soon as it does.
func TestJobStreamWaitsForTheJob(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.stream(t, "/api/namespaces/ns/jobs/later/stream")
	var v JobView
	s.waitFor(t, "job", &v, func() bool { return true })
	if v.Exists {
		t.Fatalf("a job that does not exist: %+v", v)
	}
	if err := f.ctrl.Create(context.Background(), testutil.MakePaddleJob("later", "ns").Workers(1).Obj()); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "job", &v, func() bool { return v.Exists })
}

// What the user may not read is said, with the API server's words, and
// the rest of the page still works: the dashboard has no credentials of
// its own to read it with.
func TestJobStreamSaysWhatTheUserMayNotRead(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").Workers(1).Obj()
	f := newFixture(t, fixtureOptions{}, job)
	f.cs.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", fmt.Errorf(`User "alice" cannot list resource "configmaps" in the namespace "ns"`))
	})
	s := f.stream(t, "/api/namespaces/ns/jobs/wd/stream")
	var p Problem
	s.waitFor(t, "problem", &p, func() bool { return p.Message != "" })
	if !strings.Contains(p.Message, "reading the metric history") || !strings.Contains(p.Message, `cannot list resource "configmaps"`) {
		t.Errorf("problem %q", p.Message)
	}
	var v JobView
	s.waitFor(t, "job", &v, func() bool { return v.Exists })
}

// A pod row says why a pod stands where it does from its containers, not
// from its sidecar (an init container with restartPolicy Always): a pod that
// succeeded shows its container's exit code, not the 143 of the sidecar
// stopped after it; a running pod whose sidecar crash-loops says so.
func TestPodRowOfAPodWithASidecar(t *testing.T) {
	terminated := func(name string, code int32, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
	}
	crashLooping := corev1.ContainerStatus{Name: "proxy", RestartCount: 2,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}
	tests := []struct {
		name         string
		phase        corev1.PodPhase
		proxy, main  corev1.ContainerStatus
		wantReason   string
		wantExitCode *int32
		wantRestarts int32
	}{
		{"succeeded, sidecar stopped after", corev1.PodSucceeded, terminated("proxy", 143, "Error"), terminated("main", 0, "Completed"), "Completed", ptr.To[int32](0), 0},
		{"failed, sidecar stopped after", corev1.PodFailed, terminated("proxy", 143, "Error"), terminated("main", 3, "Error"), "Error", ptr.To[int32](3), 0},
		{"succeeded, sidecar left in back-off", corev1.PodSucceeded, crashLooping, terminated("main", 0, "Completed"), "Completed", ptr.To[int32](0), 2},
		{"running, sidecar crash-looping", corev1.PodRunning, crashLooping, corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, "CrashLoopBackOff", ptr.To[int32](1), 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
					Containers:     []corev1.Container{{Name: "main"}},
				},
				Status: corev1.PodStatus{Phase: tc.phase, InitContainerStatuses: []corev1.ContainerStatus{tc.proxy}, ContainerStatuses: []corev1.ContainerStatus{tc.main}},
			}
			r := podRowOf(p)
			if r.Reason != tc.wantReason || !reflect.DeepEqual(r.ExitCode, tc.wantExitCode) || r.Restarts != tc.wantRestarts {
				t.Errorf("row reason %q, exit code %v, restarts %d; want %q, %v, %d", r.Reason, ptr.Deref(r.ExitCode, -1), r.Restarts, tc.wantReason, ptr.Deref(tc.wantExitCode, -1), tc.wantRestarts)
			}
		})
	}
}

// A pod's reason is what holds it or how it ended, never an init container
// that did its work: the scheduler's reason while it waits unplaced, none
// while it trains after its init container completed.
func TestPodRowSaysWhyAPodWaitsAndNotThatItsInitContainerCompleted(t *testing.T) {
	const insufficient = "0/1 nodes are available: 1 Insufficient cpu."
	unplaced := &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "paddle"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: insufficient,
		}}},
	}
	if r := podRowOf(unplaced); r.Reason != corev1.PodReasonUnschedulable || r.Message != insufficient {
		t.Errorf("unplaced pod's row: reason %q, message %q", r.Reason, r.Message)
	}
	training := &corev1.Pod{
		Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "wait-for-endpoints"}}, Containers: []corev1.Container{{Name: "paddle"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "wait-for-endpoints", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "paddle", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
	if r := podRowOf(training); r.Reason != "" || r.ExitCode != nil {
		t.Errorf("training pod's row: reason %q, exit code %v; want none", r.Reason, ptr.Deref(r.ExitCode, -1))
	}
}
