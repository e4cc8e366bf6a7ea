package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestShouldRestart(t *testing.T) {
	always, onFailure, never := corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever
	tests := []struct {
		policy      corev1.RestartPolicy
		init        bool
		exit        int32
		probeKilled bool
		want        bool
	}{
		{always, false, 0, false, true},
		{always, false, 1, false, true},
		{"", false, 0, false, true},
		{onFailure, false, 0, false, false},
		{onFailure, false, 137, false, true},
		{never, false, 0, false, false},
		{never, false, 1, false, false},
		{always, true, 0, false, false},
		{always, true, 1, false, true},
		{onFailure, true, 2, false, true},
		{never, true, 2, false, false},
		// A run its probe killed failed, even if it exited 0 on SIGTERM.
		{onFailure, false, 0, true, true},
		{never, false, 0, true, false},
	}
	for _, tc := range tests {
		if got := shouldRestart(tc.policy, tc.init, tc.exit, tc.probeKilled); got != tc.want {
			t.Errorf("shouldRestart(%q, init=%v, exit=%d, probeKilled=%v) = %v, want %v", tc.policy, tc.init, tc.exit, tc.probeKilled, got, tc.want)
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
