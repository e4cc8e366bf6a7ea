package progress

import (
	"sort"
	"unsafe"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
)

// The store accounts the memory it holds, so that Options.MaxBytes bounds
// it: each job's entry, its reporting pods, its latest report and its
// curves, at the sizes the Go runtime allocates them (structs, slices by
// capacity, strings, a share of each map's table). The allocator's rounding
// to size classes is left out; TestStoreAccountsItsHeap checks the sum
// against the heap it really takes.
const (
	// pointBytes is one point of a curve; a point with a step holds a
	// pointer to an 8-byte allocation of its own.
	pointBytes = int64(unsafe.Sizeof(Point{}))
	stepBytes  = 8
	// mapSlotBytes is a map entry of up to 40 bytes of key and value, with
	// the table's control bytes and its 7/8 load factor.
	mapSlotBytes = 48
	// smallMapBytes is a map's header and its first group of 8 slots,
	// allocated with its first entry.
	smallMapBytes = 48 + 8*mapSlotBytes
	// minThinnedPoints is the fewest points a curve is thinned to when the
	// store is over its budget.
	minThinnedPoints = 4
	// shrinkTo is the share of the budget a store over it shrinks to, so
	// that it shrinks once for many reports, not at each.
	shrinkTo = 0.9
)

// PointBytes is what one point of a metric's curve costs the operator's
// memory: the point (time, value, step pointer) and its step.
const PointBytes = pointBytes + stepBytes

// Bytes is the memory the store accounts to the jobs it holds.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

func (s *Store) accountLocked(e *jobEntry, delta int64) {
	e.bytes += delta
	s.bytes += delta
}

func stringBytes(v string) int64 { return (int64(len(v)) + 7) &^ 7 }

// entryBytes is a job's entry without pods, report or curves: the entry,
// its key and slot in the store's map, and its two maps.
func entryBytes(job types.NamespacedName) int64 {
	return int64(unsafe.Sizeof(jobEntry{})) + stringBytes(job.Namespace) + stringBytes(job.Name) + mapSlotBytes + 2*smallMapBytes
}

// podBytes is a reporting pod: its entry, rate limiter, name and slot.
func podBytes(pod string) int64 {
	return int64(unsafe.Sizeof(podEntry{})+unsafe.Sizeof(rate.Limiter{})) + stringBytes(pod) + mapSlotBytes
}

// newJobBytes is what the first report of a job adds, before its metrics.
func newJobBytes(job types.NamespacedName, pod string) int64 {
	return entryBytes(job) + podBytes(pod)
}

// reportBytes is a latest report beyond the entry holding it: its metrics
// and the values its pointers point to.
func reportBytes(r Report) int64 {
	n := int64(cap(r.Metrics)) * int64(unsafe.Sizeof(Metric{}))
	for _, m := range r.Metrics {
		n += stringBytes(m.Name)
	}
	for _, p := range []bool{r.Percent != nil, r.Epoch != nil, r.TotalEpochs != nil, r.Step != nil, r.ETASeconds != nil} {
		if p {
			n += 8
		}
	}
	return n
}

// seriesBytes is a metric's curve, when the entry holds it: its points by
// capacity, a step for each (whether it has one or not: counting them
// would cost a pass over the curve at each report), its name (in the map
// and the order list).
func seriesBytes(name string, pts []Point, held bool) int64 {
	if !held {
		return 0
	}
	return stringBytes(name) + 16 + mapSlotBytes + int64(cap(pts))*pointBytes + int64(len(pts))*stepBytes
}

// shrinkLocked brings a store over its budget (with need more bytes) to
// shrinkTo of it, as far as it can: it forgets the finished jobs whose history is
// written, then thins the curves of the jobs whose latest report is oldest.
func (s *Store) shrinkLocked(need int64) {
	if s.bytes+need <= s.opts.MaxBytes {
		return
	}
	if s.bytes < s.futileAt+s.opts.MaxBytes/100 {
		return // it could not shrink at this size: wait for 1% more
	}
	target := int64(shrinkTo*float64(s.opts.MaxBytes)) - need
	defer func() {
		if s.bytes > target {
			s.futileAt = s.bytes
		} else {
			s.futileAt = 0
		}
	}()
	type held struct {
		job types.NamespacedName
		e   *jobEntry
	}
	byAge := make([]held, 0, len(s.jobs))
	for k, e := range s.jobs {
		byAge = append(byAge, held{k, e})
	}
	sort.Slice(byAge, func(i, j int) bool { return byAge[i].e.lastAt.Before(byAge[j].e.lastAt) })
	for _, h := range byAge {
		if s.bytes <= target {
			return
		}
		if h.e.finished && !h.e.dirty {
			s.forgetLocked(h.job)
		}
	}
	for _, h := range byAge {
		if s.bytes <= target {
			return
		}
		if s.jobs[h.job] == h.e {
			s.thinLocked(h.e)
		}
	}
}

// thinLocked halves each curve of e longer than minThinnedPoints, keeping
// its first and latest points (so its span), into a slice of its own size.
// The history written already keeps its resolution until the next write.
func (s *Store) thinLocked(e *jobEntry) {
	for name, pts := range e.history {
		if len(pts) < 2*minThinnedPoints {
			continue
		}
		kept := make([]Point, 0, (len(pts)+2)/2)
		for i := 0; i < len(pts); i += 2 {
			kept = append(kept, pts[i])
		}
		if (len(pts)-1)%2 != 0 {
			kept = append(kept, pts[len(pts)-1])
		}
		s.accountLocked(e, seriesBytes(name, kept, true)-seriesBytes(name, pts, true))
		e.history[name] = kept
	}
}
