package controller

import (
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// activeDeadlineSeconds: a job running longer fails. The clock starts when
// the operator first sees the job active (status.startTime, as batch/v1 Job
// counts), whether or not its pods could be created, and restarts when a
// suspended job resumes.

// ReasonDeadlineExceeded fails a job that ran past activeDeadlineSeconds.
const ReasonDeadlineExceeded = "DeadlineExceeded"

// deadlineFailure is the Failed condition of a job past its
// activeDeadlineSeconds, or nil and how long until the deadline (0 without
// one).
func deadlineFailure(job *paddlev1.PaddleJob, now time.Time) (*metav1.Condition, time.Duration) {
	exceeded, left := deadlineExceeded(job, now)
	if !exceeded {
		return nil, left
	}
	return &metav1.Condition{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: ReasonDeadlineExceeded,
		Message: fmt.Sprintf("the job ran longer than activeDeadlineSeconds (%ds)", *job.Spec.ActiveDeadlineSeconds)}, 0
}

// deadlineExceeded reports whether the job ran past activeDeadlineSeconds
// and, if not, how long until it does (0 without a deadline). A job whose
// start is not recorded yet starts now. The arithmetic cannot overflow: a
// deadline past what a time.Duration holds (292 years) never falls.
func deadlineExceeded(job *paddlev1.PaddleJob, now time.Time) (bool, time.Duration) {
	if job.Spec.ActiveDeadlineSeconds == nil {
		return false, 0
	}
	start := now
	if job.Status.StartTime != nil {
		start = job.Status.StartTime.Time
	}
	limit := *job.Spec.ActiveDeadlineSeconds
	if limit > int64(math.MaxInt64/time.Second) {
		return false, 0
	}
	elapsed := now.Sub(start) // saturates rather than wraps
	deadline := time.Duration(limit) * time.Second
	if elapsed >= deadline {
		return true, 0
	}
	return false, deadline - elapsed
}
