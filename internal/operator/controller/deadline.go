package controller

import (
	"time"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// activeDeadlineSeconds: a job running longer fails. The clock starts with
// the job's first pods and restarts when a suspended job resumes.

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
