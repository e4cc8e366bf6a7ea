package main

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
)

func phaseJob(name, phase string, restarts int64, conditions ...metav1.Condition) *unstructured.Unstructured {
	var conds []any
	for _, c := range conditions {
		conds = append(conds, map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason})
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"phase": phase, "restartCount": restarts, "conditions": conds}}}
	u.SetName(name)
	return u
}

func jobPod(job, name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Labels: map[string]string{paddlev1.LabelJobName: job}}}
}

// A restarted job is done once it runs again with a restart counted and
// its Restarting condition says so; its replacement pods are the new UIDs
// of its jobs only.
func TestRestartPhaseTracker(t *testing.T) {
	pt := newPhaseTracker([]string{"j1"}, []*corev1.Pod{jobPod("j1", "j1-ps-0", "old")}, 2, restarted)
	t0 := time.Unix(100, 0)
	restarting := metav1.Condition{Type: paddlev1.JobRestarting, Status: metav1.ConditionTrue, Reason: controller.ReasonPodFailed}
	again := metav1.Condition{Type: paddlev1.JobRestarting, Status: metav1.ConditionFalse, Reason: controller.ReasonRestarted}
	pt.job(phaseJob("j1", "Running", 0), t0)
	pt.job(phaseJob("j1", "Running", 1, restarting), t0) // counted, the old pods still running
	pt.pod(jobPod("j1", "j1-ps-0", "old"), t0)
	pt.pod(jobPod("j2", "j2-ps-0", "other"), t0)
	pt.pod(jobPod("j1", "j1-ps-0", "new"), t0.Add(time.Second))
	if closed(pt.allDone) || closed(pt.allFresh) {
		t.Fatalf("done too early: %s", pt.missing())
	}
	pt.pod(jobPod("j1", "j1-worker-0", "new2"), t0.Add(3*time.Second))
	// No phase between: a watch that relisted shows the job Running again.
	pt.job(phaseJob("j1", "Running", 1, again), t0.Add(4*time.Second))
	if !closed(pt.allDone) || !closed(pt.allFresh) {
		t.Fatalf("not done: %s", pt.missing())
	}
	if !pt.freshAt.Equal(t0.Add(3*time.Second)) || !pt.doneAt.Equal(t0.Add(4*time.Second)) {
		t.Errorf("times %v, %v", pt.freshAt, pt.doneAt)
	}
}

func TestCompletePhaseTracker(t *testing.T) {
	pt := newPhaseTracker([]string{"j1", "j2"}, nil, 0, completed)
	t0 := time.Unix(100, 0)
	pt.job(phaseJob("j1", "Completed", 0), t0)
	pt.job(phaseJob("j2", "Running", 0), t0)
	if !closed(pt.allFresh) || closed(pt.allDone) {
		t.Fatalf("%s", pt.missing())
	}
	pt.job(phaseJob("j2", "Completed", 0), t0.Add(time.Second))
	if !closed(pt.allDone) || !pt.doneAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("%s, done at %v", pt.missing(), pt.doneAt)
	}
}

func TestPhaseJobs(t *testing.T) {
	for _, tc := range []struct {
		restart, complete int
		wantR, wantC      []string
	}{
		{1, 2, []string{"a"}, []string{"c", "d"}},
		{0, 0, []string{}, []string{}},
		{9, 3, []string{"a", "b", "c", "d"}, []string{"b", "c", "d"}},
	} {
		r, c := phaseJobs([]string{"d", "b", "a", "c"}, tc.restart, tc.complete)
		if !slices.Equal(r, tc.wantR) || !slices.Equal(c, tc.wantC) {
			t.Errorf("phaseJobs(%d, %d) = %q, %q; want %q, %q", tc.restart, tc.complete, r, c, tc.wantR, tc.wantC)
		}
	}
}

// The killed pod's status is what the operator reads as a retryable
// failure: phase Failed, every container terminated with 137.
func TestFailedStatusPatch(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "paddle", Image: "img"}}}}
	b, err := failedStatusPatch(p, time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Status corev1.PodStatus }
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	cs := got.Status.ContainerStatuses
	if got.Status.Phase != corev1.PodFailed || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != killedExitCode {
		t.Errorf("status %+v", got.Status)
	}
}
