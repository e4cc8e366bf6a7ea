package progress

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// What the history writer (history.go) asks of the store.

// historyTick is how often the history writer looks for due histories.
const historyTick = time.Second

// historyDue returns the jobs whose history is due, with a copy of it, and
// marks them written: a finished job's at once, so its history holds every
// point the store kept as soon as the job ends; a running job's once it
// changed and was last written at least HistoryFlush ago, as far as the
// history share of the write budget allows, those written longest ago
// first.
func (s *Store) historyDue(now time.Time) map[types.NamespacedName]historyCopy {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	var waiting []types.NamespacedName
	out := map[types.NamespacedName]historyCopy{}
	for k, e := range s.jobs {
		switch {
		case !e.dirty:
		case e.finished && !e.retried:
			s.historyWrites.ReserveN(now, 1) // counted, never delayed
			out[k] = s.takeHistoryLocked(e, now)
		case now.Sub(e.flushed) >= s.opts.HistoryFlush-historyTick/10:
			// A tick a hair early counts: the writer looks once a tick,
			// and a write left to the next one would double the lag.
			waiting = append(waiting, k)
		}
	}
	sort.Slice(waiting, func(i, j int) bool {
		a, b := s.jobs[waiting[i]], s.jobs[waiting[j]]
		if !a.flushed.Equal(b.flushed) {
			return a.flushed.Before(b.flushed)
		}
		return waiting[i].String() < waiting[j].String()
	})
	for _, k := range waiting {
		if !s.historyWrites.AllowN(now, 1) {
			break // the others' turn comes on a later tick
		}
		out[k] = s.takeHistoryLocked(s.jobs[k], now)
	}
	return out
}

// takeHistoryLocked copies e's history and marks it written.
func (s *Store) takeHistoryLocked(e *jobEntry, now time.Time) historyCopy {
	h := historyCopy{uid: e.uid, order: append([]string(nil), e.order...), series: map[string][]Point{}}
	for n, pts := range e.history {
		h.series[n] = append([]Point(nil), pts...)
	}
	e.dirty, e.flushed = false, now
	return h
}

// markDirty asks for a job's history to be written again (its write
// failed): within the budget, even a finished job's, so a failing write is
// not retried every tick.
func (s *Store) markDirty(job types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.jobs[job]; e != nil {
		e.dirty, e.retried = true, true
	}
}

type historyCopy struct {
	uid    types.UID
	order  []string
	series map[string][]Point
}

// holds reports whether the store holds job of that UID.
func (s *Store) holds(job types.NamespacedName, uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobs[job]
	return e != nil && e.uid == uid
}
