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
		kind        containerKind
		exit        int32
		probeKilled bool
		want        bool
	}{
		{always, kindContainer, 0, false, true},
		{always, kindContainer, 1, false, true},
		{"", kindContainer, 0, false, true},
		{onFailure, kindContainer, 0, false, false},
		{onFailure, kindContainer, 137, false, true},
		{never, kindContainer, 0, false, false},
		{never, kindContainer, 1, false, false},
		{always, kindInit, 0, false, false},
		{always, kindInit, 1, false, true},
		{onFailure, kindInit, 2, false, true},
		{never, kindInit, 2, false, false},
		// A sidecar runs again after any exit, under any policy.
		{always, kindSidecar, 0, false, true},
		{onFailure, kindSidecar, 0, false, true},
		{never, kindSidecar, 0, false, true},
		{never, kindSidecar, 143, false, true},
		// A run its probe killed failed, even if it exited 0 on SIGTERM.
		{onFailure, kindContainer, 0, true, true},
		{never, kindContainer, 0, true, false},
		{never, kindSidecar, 0, true, true},
	}
	for _, tc := range tests {
		if got := shouldRestart(tc.policy, tc.kind, tc.exit, tc.probeKilled); got != tc.want {
			t.Errorf("shouldRestart(%q, kind=%d, exit=%d, probeKilled=%v) = %v, want %v", tc.policy, tc.kind, tc.exit, tc.probeKilled, got, tc.want)
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
