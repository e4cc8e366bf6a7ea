package controller

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// activeDeadlineSeconds: a job running longer fails. The clock starts with
// the job's first pods and restarts when a suspended job resumes.

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
// and, if not, how long until it does (0 without a deadline).
func deadlineExceeded(job *paddlev1.PaddleJob, now time.Time) (bool, time.Duration) {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil {
		return false, 0
	}
	end := job.Status.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second)
	if !now.Before(end) {
		return true, 0
	}
	return false, end.Sub(now)
}
