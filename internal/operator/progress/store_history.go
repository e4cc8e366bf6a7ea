package progress

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// What the history writer (history.go) asks of the store.

// historyDue returns the jobs whose history changed and was last written
// at least HistoryFlush ago, with a copy of it, and marks them written.
func (s *Store) historyDue(now time.Time) map[types.NamespacedName]historyCopy {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	out := map[types.NamespacedName]historyCopy{}
	for k, e := range s.jobs {
		if !e.dirty || now.Sub(e.flushed) < s.opts.HistoryFlush {
			continue
		}
		h := historyCopy{uid: e.uid, order: append([]string(nil), e.order...), series: map[string][]Point{}}
		for n, pts := range e.history {
			h.series[n] = append([]Point(nil), pts...)
		}
		out[k] = h
		e.dirty, e.flushed = false, now
	}
	return out
}

// markDirty asks for a job's history to be written again (its write failed).
func (s *Store) markDirty(job types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.jobs[job]; e != nil {
		e.dirty = true
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
