package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// passCase is one row of a feature's table test: a job, what the cache
// shows beside it, the reconciler's options, and what one pass must do.
type passCase struct {
	name string
	job  *paddlev1.PaddleJob
	opts Options
	// pods are the job's pods the cache shows; nil shows none.
	pods func(*paddlev1.PaddleJob) []*corev1.Pod
	// others are more objects the cache shows: other jobs, PodGroups.
	others []client.Object
	// setup adjusts the reconciler before the pass; nil adjusts nothing.
	setup func(*fixture)
	want  passWant
	// check checks more of the pass's outcome; nil checks nothing more.
	check func(*testing.T, passResult)
}

// run runs one pass of the case on a new fixture and checks its outcome.
func (tc passCase) run(t *testing.T) {
	t.Helper()
	var pods []*corev1.Pod
	if tc.pods != nil {
		pods = tc.pods(tc.job)
	}
	f := newFixture(t, tc.opts, append(objects(tc.job, pods...), tc.others...)...)
	if tc.setup != nil {
		tc.setup(f)
	}
	got := f.reconcile(t, tc.job)
	tc.want.check(t, got)
	if tc.check != nil {
		tc.check(t, got)
	}
}

// runPassCases runs each case as a subtest.
func runPassCases(t *testing.T, cases []passCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

// checkStatus checks the job's status after the pass with check.
func checkStatus(check func(*testing.T, paddlev1.PaddleJobStatus)) func(*testing.T, passResult) {
	return func(t *testing.T, got passResult) {
		t.Helper()
		check(t, got.job.Status)
	}
}
