package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestCleanPodPolicy(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").PS(1).Workers(2).Obj()
	pods := map[string]*corev1.Pod{}
	var all []*corev1.Pod
	for _, p := range []struct {
		name  string
		state func(*testutil.PodWrapper) *testutil.PodWrapper
	}{
		{"wd-ps-0", func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Running("10.0.0.1") }},
		{"wd-worker-0", func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Succeeded() }},
		{"wd-worker-1", func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Failed("paddle", 3) }},
	} {
		pod := p.state(testutil.WrapPod(&corev1.Pod{})).Obj()
		pod.Name = p.name
		pods[p.name] = pod
		all = append(all, pod)
	}

	tests := []struct {
		policy paddlev1.CleanPodPolicy
		alias  paddlev1.CleanPodPolicy
		phase  paddlev1.PaddleJobPhase
		want   []string
	}{
		// Running pods are stopped whatever the policy; terminated ones as the policy says.
		{policy: paddlev1.CleanPodPolicyNever, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0"}},
		{policy: paddlev1.CleanPodPolicyNever, phase: paddlev1.PaddleJobFailed, want: []string{"wd-ps-0"}},
		{policy: paddlev1.CleanPodPolicyAlways, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
		{policy: paddlev1.CleanPodPolicyAlways, phase: paddlev1.PaddleJobFailed, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
		{policy: paddlev1.CleanPodPolicyOnCompletion, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
		{policy: paddlev1.CleanPodPolicyOnCompletion, phase: paddlev1.PaddleJobFailed, want: []string{"wd-ps-0"}},
		{policy: paddlev1.CleanPodPolicyOnFailure, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0"}},
		{policy: paddlev1.CleanPodPolicyOnFailure, phase: paddlev1.PaddleJobFailed, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
		// Unset means Never; the deprecated cleanPolicy alias counts when cleanPodPolicy is unset.
		{phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0"}},
		{alias: paddlev1.CleanPodPolicyOnCompletion, phase: paddlev1.PaddleJobCompleted, want: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}},
	}
	for _, tc := range tests {
		j := job.DeepCopy()
		j.Spec.CleanPodPolicy, j.Spec.CleanPolicy = tc.policy, tc.alias
		j.Status.Phase = tc.phase
		var got []string
		for _, p := range podsToDeleteWhenFinished(j, all) {
			got = append(got, p.Name)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("policy %q (alias %q), job %s (-want +got):\n%s", tc.policy, tc.alias, tc.phase, diff)
		}
	}
}
