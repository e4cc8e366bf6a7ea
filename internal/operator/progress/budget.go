package progress

import "time"

// The write budget (Options.WritesPerSecond) shared by all jobs' reports.

// statusShare is the part of Options.WritesPerSecond given to status
// copies: a status write is what `run`, `get -w` and the dashboard show,
// the history's curve may lag more.
const statusShare = 0.8

// statusDueLocked says how long until e's progress may be copied into its
// status: StatusInterval after the last copy, then at the slot the status
// share of the budget reserves for it. A last copy (at once) is counted
// too, delaying the others'.
func (s *Store) statusDueLocked(e *jobEntry, now time.Time, last bool) time.Duration {
	if last {
		if e.slot.IsZero() {
			s.statusWrites.ReserveN(now, 1)
		}
		return 0
	}
	if next := e.lastCopy.Add(s.opts.StatusInterval); now.Before(next) {
		return next.Sub(now)
	}
	if e.slot.IsZero() {
		e.slot = now.Add(s.statusWrites.ReserveN(now, 1).DelayFrom(now))
	}
	return e.slot.Sub(now)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
