package controller

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Failures that come together are judged together. When one process of a
// distributed job dies, its peers die of it moments later: a rank crashes
// (exit 1) and the others lose their collective (a Gloo timeout, exit 250)
// or their parameter server. Judged one by one as the operator happens to
// see them, the same crash restarts the job when a peer's retryable exit is
// seen first and fails it when the crash is seen first. So the first new
// failure of a job opens a settling window, measured from when its
// container finished (not from when the operator saw it): the failures whose
// containers finish within the window form one set, judged once the window
// has passed, in the order their containers finished. Any failure of the set
// that the policies do not restart fails the job, naming the first such pod;
// otherwise the set restarts (the whole job once, or each failed pod).
// A failure that is not restartable decides at once: whatever else fails
// with it, the job fails. Failures after the window are a later set: a
// restart of the whole job absorbs them, otherwise they are judged on their
// own once their own window has passed.

// DefaultFailureSettleWindow is how long after a job's first new failure
// its other pods' failures still count as failing with it
// (--failure-settle-window). Paddle 3.0's launcher
// notices a dead training process within a second (it polls its processes
// every second), tells its peers through its master, whose launchers check
// every 2 s, and each stops what is left of its processes within 3 s before
// it exits: the last launcher of a crash exits about 6 s after the first at
// worst. Pod times are stored to the second, which widens a spread by up to
// one more. 10 s covers that with room for a loaded machine (the local
// cluster runs on two shared cores), and costs a restart little beside its
// backoff and its pods' start-up.
const DefaultFailureSettleWindow = 10 * time.Second

// failureSet is the new failures of a job that are judged together.
type failureSet struct {
	// pods are the failed pods of the set, in the order their containers
	// finished (pods that finished together in role and index order).
	pods []*corev1.Pod
	// first is when the first of them failed, closes when the window ends,
	// and wait how long until then: 0 once the window has passed.
	first, closes time.Time
	wait          time.Duration
}

// settleFailures picks, from a job's new failed pods (in role and index
// order), the set judged together at now: the first to fail and those
// that failed within window of it.
func settleFailures(failed []*corev1.Pod, now time.Time, window time.Duration) failureSet {
	if len(failed) == 0 {
		return failureSet{}
	}
	type failure struct {
		pod *corev1.Pod
		at  time.Time
	}
	all := make([]failure, 0, len(failed))
	for _, p := range failed {
		all = append(all, failure{p, failedAt(p)})
	}
	slices.SortStableFunc(all, func(a, b failure) int { return a.at.Compare(b.at) })
	set := failureSet{first: all[0].at, closes: all[0].at.Add(window)}
	for _, f := range all {
		if f.at.Before(set.closes) {
			set.pods = append(set.pods, f.pod)
		}
	}
	if now.Before(set.closes) {
		set.wait = set.closes.Sub(now)
	}
	return set
}

// failedAt is when a failed pod failed: when the first of its containers
// that exited with a non-zero code finished; for a pod that failed without
// one (evicted, its node lost), the latest change of its conditions, else
// its creation. Each is a time the API stores, the same in every pass.
func failedAt(p *corev1.Pod) time.Time {
	var at time.Time
	for _, cs := range trainingStatuses(p) {
		t := cs.State.Terminated
		if t == nil || t.ExitCode == 0 || t.FinishedAt.IsZero() {
			continue
		}
		if at.IsZero() || t.FinishedAt.Time.Before(at) {
			at = t.FinishedAt.Time
		}
	}
	if !at.IsZero() {
		return at
	}
	for _, c := range p.Status.Conditions {
		if c.LastTransitionTime.Time.After(at) {
			at = c.LastTransitionTime.Time
		}
	}
	if !at.IsZero() {
		return at
	}
	return p.CreationTimestamp.Time
}

// settling says, for the Running condition, which failures the decision
// waits on and until when.
func (s failureSet) settling() string {
	return fmt.Sprintf("%s failed at %s: restarting or failing the job waits until %s for the pods failing with it",
		listNames(podNames(s.pods)), s.first.UTC().Format(time.RFC3339), s.closes.UTC().Format(time.RFC3339))
}
