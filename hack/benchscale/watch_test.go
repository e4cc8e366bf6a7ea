package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestTracker(t *testing.T) {
	o := &observer{trackers: map[string]*tracker{}}
	tr := o.track("ns", 3, 2)
	t0 := time.Unix(100, 0)
	tr.podSeen("a", t0)
	tr.podSeen("a", t0.Add(time.Second)) // an update: not a new pod
	tr.podSeen("b", t0.Add(2*time.Second))
	tr.jobPhase("j1", "Starting", t0)
	if closed(tr.allPods) || closed(tr.allRunning) {
		t.Fatal("done too early")
	}
	if got := tr.missing(); got != "2 of 3 pods created; 0 of 2 jobs Running (others: 1 Starting, 1 not seen)" {
		t.Errorf("missing = %q", got)
	}
	tr.podSeen("c", t0.Add(3*time.Second))
	tr.jobPhase("j1", "Running", t0.Add(4*time.Second))
	tr.jobPhase("j2", "Running", t0.Add(5*time.Second))
	tr.jobPhase("j2", "Running", t0.Add(6*time.Second)) // unchanged phase
	if !closed(tr.allPods) || !closed(tr.allRunning) {
		t.Fatal("not done")
	}
	pods, running := tr.times()
	if !pods.Equal(t0.Add(3*time.Second)) || !running.Equal(t0.Add(5*time.Second)) {
		t.Errorf("times = %v, %v", pods, running)
	}
	if got := tr.missing(); got != "nothing" {
		t.Errorf("missing = %q", got)
	}
	tr.jobPhase("j1", "Failed", t0.Add(7*time.Second)) // left Running: counted out, times kept
	if got := tr.missing(); !strings.Contains(got, "1 of 2 jobs Running (others: 1 Failed)") {
		t.Errorf("missing = %q", got)
	}
	if o.tracker("ns") != tr || o.tracker("other") != nil {
		t.Error("lookup")
	}
	o.untrack("ns")
	if o.tracker("ns") != nil {
		t.Error("untrack")
	}
}

func TestLargestPodBytes(t *testing.T) {
	small := &corev1.Pod{}
	big := &corev1.Pod{}
	big.Name = strings.Repeat("x", 100)
	if got := largestPodBytes(nil, 50); got != 0 {
		t.Errorf("no pods: %d", got)
	}
	if got, want := largestPodBytes([]*corev1.Pod{small, big}, 50), jsonSize(big); got != want {
		t.Errorf("got %d, want %d", got, want)
	}
	if got, want := largestPodBytes([]*corev1.Pod{small, big}, 1), jsonSize(small); got != want {
		t.Errorf("first only: got %d, want %d", got, want)
	}
}
