package dashboard

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// restartReasons are the reasons of the operator's events that say it
// restarted the job as a whole or recreated failed pods.
var restartReasons = []string{"RestartingJob", "RestartingPod"}

// restartTimes are when the job was restarted, oldest first, for the marks
// on its curves. The status keeps only the latest restart
// (lastRestartTime, the Restarting condition), so the earlier ones come
// from the operator's events; an event repeated is aggregated by the API
// server into its first and last time, and the times between are lost.
// Times less than a second apart are one restart.
func restartTimes(job *paddlev1.PaddleJob, events []corev1.Event) []time.Time {
	var ts []time.Time
	if t := job.Status.LastRestartTime; t != nil {
		ts = append(ts, t.Time)
	}
	for _, c := range job.Status.Conditions {
		if c.Type == paddlev1.JobRestarting && c.Status == "True" {
			ts = append(ts, c.LastTransitionTime.Time)
		}
	}
	for _, e := range events {
		if !slices.Contains(restartReasons, e.Reason) {
			continue
		}
		for _, t := range []time.Time{e.FirstTimestamp.Time, e.EventTime.Time, e.LastTimestamp.Time} {
			if !t.IsZero() {
				ts = append(ts, t)
			}
		}
		if s := e.Series; s != nil && !s.LastObservedTime.IsZero() {
			ts = append(ts, s.LastObservedTime.Time)
		}
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	out := []time.Time{}
	for _, t := range ts {
		if len(out) > 0 && t.Sub(out[len(out)-1]) < time.Second {
			continue
		}
		out = append(out, t)
	}
	return out
}
