package client

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestJobEventFilter(t *testing.T) {
	event := func(kind, apiVersion, ns, name string) *corev1.Event {
		return &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: ns, Name: name}}
	}
	wd := types.NamespacedName{Namespace: "ns", Name: "wide-and-deep"}
	one := JobEventFilter{Jobs: map[types.NamespacedName]bool{wd: true}}
	all := JobEventFilter{Jobs: map[types.NamespacedName]bool{wd: true}, AllJobs: true}
	tests := []struct {
		e         *corev1.Event
		one, all  bool
		described string
	}{
		{event("PaddleJob", "batch.paddlepaddle.org/v1", "ns", "wide-and-deep"), true, true, "the job"},
		{event("PaddleJob", "batch.paddlepaddle.org/v1", "ns", "gone"), false, true, "a deleted job"},
		{event("PaddleJob", "batch.paddlepaddle.org/v1", "other", "wide-and-deep"), false, true, "a job of another namespace"},
		{event("Pod", "v1", "ns", "wide-and-deep-worker-12"), true, true, "a pod of the job"},
		{event("Pod", "v1", "ns", "wide-and-deep-ps-0"), true, true, "a server of the job"},
		{event("Pod", "v1", "ns", "wide-and-deep-launcher-0"), false, false, "a pod of no role"},
		{event("Pod", "v1", "ns", "gone-worker-0"), false, false, "a pod of no job that exists"},
		{event("Pod", "v1", "other", "wide-and-deep-worker-0"), false, false, "a pod of another namespace"},
		{event("Service", "v1", "ns", "wide-and-deep"), false, false, "the job's Service"},
		{event("PaddleJob", "other.example.com/v1", "ns", "wide-and-deep"), false, false, "another API's PaddleJob"},
	}
	for _, tc := range tests {
		if got := one.Matches(tc.e); got != tc.one {
			t.Errorf("%s: one job's filter says %v", tc.described, got)
		}
		if got := all.Matches(tc.e); got != tc.all {
			t.Errorf("%s: every job's filter says %v", tc.described, got)
		}
	}
}
