package dashboard

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/transition"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The job's timeline: every transition of its conditions and every restart.
// The status keeps only each condition's latest transition; the operator's
// events (internal/transition, and RestartingJob/RestartingPod) keep the
// others, for as long as the API server keeps events (an hour by default).

// TimelineEntry is one transition of a condition, or a restart (Type
// "Restart", Status "").
type TimelineEntry struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

// Interval is a span of time; To is nil while it lasts.
type Interval struct {
	From time.Time  `json:"from"`
	To   *time.Time `json:"to,omitempty"`
}

// sameTransition is how far apart the event of a transition and the
// condition's time may be: the condition keeps whole seconds.
const sameTransition = 2 * time.Second

// timelineOf merges the job's events with its status, oldest first.
func timelineOf(job *paddlev1.PaddleJob, events []corev1.Event) []TimelineEntry {
	out := []TimelineEntry{}
	for _, e := range events {
		switch {
		case e.Reason == transition.Reason:
			if p, ok := transition.Parse(e.Message); ok {
				out = append(out, TimelineEntry{Time: client.EventTime(e), Type: p.Type, Status: p.Status, Reason: p.Reason, Message: p.Message})
			}
		case slices.Contains(restartReasons, e.Reason):
			out = append(out, TimelineEntry{Time: client.EventTime(e), Type: "Restart", Reason: e.Reason, Message: e.Message})
		}
	}
	for _, c := range job.Status.Conditions {
		t := c.LastTransitionTime.Time
		if slices.ContainsFunc(out, func(e TimelineEntry) bool {
			return e.Type == c.Type && e.Status == string(c.Status) && e.Time.Sub(t).Abs() < sameTransition
		}) {
			continue
		}
		out = append(out, TimelineEntry{Time: t, Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	slices.SortStableFunc(out, func(a, b TimelineEntry) int { return a.Time.Compare(b.Time) })
	return out
}

// suspensionsOf are when the job was suspended (or queued by Kueue), from
// its timeline: the curves have a gap there, not a line drawn through.
func suspensionsOf(timeline []TimelineEntry) []Interval {
	out := []Interval{}
	open := false
	for _, e := range timeline {
		if e.Type != paddlev1.JobSuspended {
			continue
		}
		switch {
		case e.Status == "True" && !open:
			out, open = append(out, Interval{From: e.Time}), true
		case e.Status != "True" && open:
			out[len(out)-1].To, open = &e.Time, false
		}
	}
	return out
}
