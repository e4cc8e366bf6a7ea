package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestShouldRestart(t *testing.T) {
	tests := []struct {
		policy corev1.RestartPolicy
		init   bool
		exit   int32
		want   bool
	}{
		{corev1.RestartPolicyAlways, false, 0, true},
		{corev1.RestartPolicyAlways, false, 1, true},
		{"", false, 0, true},
		{corev1.RestartPolicyOnFailure, false, 0, false},
		{corev1.RestartPolicyOnFailure, false, 137, true},
		{corev1.RestartPolicyNever, false, 0, false},
		{corev1.RestartPolicyNever, false, 1, false},
		{corev1.RestartPolicyAlways, true, 0, false},
		{corev1.RestartPolicyAlways, true, 1, true},
		{corev1.RestartPolicyOnFailure, true, 2, true},
		{corev1.RestartPolicyNever, true, 2, false},
	}
	for _, tc := range tests {
		if got := shouldRestart(tc.policy, tc.init, tc.exit); got != tc.want {
			t.Errorf("shouldRestart(%q, init=%v, exit=%d) = %v, want %v", tc.policy, tc.init, tc.exit, got, tc.want)
		}
	}
}

func TestNextBackoff(t *testing.T) {
	tests := []struct {
		previous, ranFor, want time.Duration
	}{
		{0, time.Second, time.Second},
		{time.Second, time.Second, 2 * time.Second},
		{4 * time.Second, 0, 8 * time.Second},
		{4 * time.Minute, time.Second, 5 * time.Minute},
		{5 * time.Minute, time.Second, 5 * time.Minute},
		{5 * time.Minute, 10 * time.Minute, time.Second},
	}
	for _, tc := range tests {
		if got := NextCrashBackoff(tc.previous, tc.ranFor); got != tc.want {
			t.Errorf("NextCrashBackoff(%s, ran %s) = %s, want %s", tc.previous, tc.ranFor, got, tc.want)
		}
	}
}
