package progress

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// fill reports points values of metrics metrics for each of jobs jobs, one
// report a second of all metrics, each with a step; it returns the jobs
// the store refused.
func fill(t testing.TB, s *Store, now *time.Time, jobs, metrics, points int, after func()) (refused int) {
	t.Helper()
	names := make([]string, metrics)
	for m := range names {
		names[m] = fmt.Sprintf("metric_%02d", m)
	}
	for p := range points {
		*now = now.Add(time.Second)
		step := int64(p)
		for j := range jobs {
			rep := Report{Step: &step, Metrics: make(Metrics, metrics)}
			for m := range rep.Metrics {
				rep.Metrics[m] = Metric{Name: names[m], Value: float64(p)}
			}
			job := types.NamespacedName{Namespace: fmt.Sprintf("team-%03d", j%100), Name: fmt.Sprintf("ctr-train-%05d", j)}
			// put: the report is valid, and Put's check of its names
			// would be most of the test's time.
			switch s.put(job, types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", j)), job.Name+"-worker-0", 0, rep) {
			case accepted:
			case storeFull:
				refused++
			default:
				t.Fatal("rate limited")
			}
			if after != nil {
				after()
			}
		}
	}
	return refused
}

// recount is the store's size accounted afresh from what it holds.
func recount(s *Store) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k, e := range s.jobs {
		n += entryBytes(k) + reportBytes(e.report)
		for pod := range e.pods {
			n += podBytes(pod)
		}
		for name, pts := range e.history {
			n += seriesBytes(name, pts, true)
		}
	}
	return n
}

// The bound of issue 21: 5,000 jobs of 16 metrics reporting 240 points
// each (about 900 MB unbounded) stay within the default budget, every job
// still held with a curve spanning its whole run.
func TestStoreStaysWithinItsByteBudget(t *testing.T) {
	const jobs, metrics, points = 5000, paddlev1.MaxProgressMetrics, DefaultHistoryPoints
	now := time.Unix(1_700_000_000, 0)
	s := NewStore(Options{ReportRate: 1e9, ReportBurst: 1e9, TTL: 24 * time.Hour})
	s.now = func() time.Time { return now }
	var peak int64
	refused := fill(t, s, &now, jobs, metrics, points, func() { peak = max(peak, s.bytes) })
	if peak > DefaultMaxBytes {
		t.Errorf("the store accounted %d bytes at its peak, over its budget of %d", peak, DefaultMaxBytes)
	}
	if got := recount(s); got != s.Bytes() {
		t.Errorf("the store accounts %d bytes, but holds %d", s.Bytes(), got)
	}
	if refused != 0 || len(s.jobs) != jobs {
		t.Errorf("%d reports of new jobs refused, %d jobs held; want all %d held", refused, len(s.jobs), jobs)
	}
	unbounded := int64(jobs) * int64(metrics) * points * PointBytes
	t.Logf("peak %.1f MiB of a %.0f MiB budget (the points alone, unbounded: %.0f MiB)", float64(peak)/(1<<20), float64(DefaultMaxBytes)/(1<<20), float64(unbounded)/(1<<20))
	for k, e := range s.jobs {
		for name, pts := range e.history {
			if len(pts) < minThinnedPoints || pts[0].Value != 0 || pts[len(pts)-1].Value != points-1 {
				t.Fatalf("%s %s: %d points from %v to %v, want at least %d spanning 0 to %d", k, name, len(pts), pts[0].Value, pts[len(pts)-1].Value, minThinnedPoints, points-1)
			}
		}
	}
}

// Over the budget, finished jobs whose history is written go first; then
// the curves of the jobs whose latest report is oldest are thinned; a new
// job is refused only when nothing more can go.
func TestStoreEvictsFinishedJobsFirst(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	job := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("job-%d", i)}
	}
	uid := func(i int) types.UID { return types.UID(fmt.Sprintf("uid-%d", i)) }
	report := func(s *Store, i int, v float64) error {
		now = now.Add(time.Second)
		return s.Put(job(i), uid(i), job(i).Name+"-worker-0", 0, Report{Metrics: Metrics{{"loss", v}}})
	}
	s := NewStore(Options{ReportRate: 1e9, ReportBurst: 1e9, HistoryPoints: 1000, MaxBytes: 1 << 40})
	s.now = func() time.Time { return now }
	for i := range 3 {
		for p := range 200 {
			if err := report(s, i, float64(p)); err != nil {
				t.Fatalf("job %d point %d: %v", i, p, err)
			}
		}
	}
	// The budget: these three jobs, and no room for another.
	s.opts.MaxBytes = s.Bytes() + 64
	// job-1 finishes and its history is written.
	s.Take(job(1), uid(1), nil, true)
	s.historyDue(now.Add(time.Hour))
	for p := range 100 {
		if err := report(s, 3, float64(p)); err != nil {
			t.Fatalf("job 3 point %d: %v", p, err)
		}
	}
	if s.holds(job(1), uid(1)) {
		t.Error("the finished job is still held")
	}
	for _, i := range []int{0, 2} {
		if n := len(s.jobs[job(i)].history["loss"]); n != 200 {
			t.Errorf("job %d has %d points, want its 200 (the finished job made room)", i, n)
		}
	}
	// More: the oldest running job's curve is thinned.
	for p := range 200 {
		if err := report(s, 3, float64(100+p)); err != nil {
			t.Fatalf("job 3 point %d: %v", 100+p, err)
		}
	}
	if n := len(s.jobs[job(0)].history["loss"]); n >= 200 || n < minThinnedPoints {
		t.Errorf("job 0 (latest report oldest) has %d points, want its curve thinned", n)
	}
	if s.Bytes() > s.opts.MaxBytes || recount(s) != s.Bytes() {
		t.Errorf("%d bytes accounted (recounted %d), budget %d", s.Bytes(), recount(s), s.opts.MaxBytes)
	}
	// A budget too small for one more job refuses it.
	tiny := NewStore(Options{MaxBytes: newJobBytes(job(0), "job-0-worker-0") + 64})
	tiny.now = func() time.Time { return now }
	if err := report(tiny, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := report(tiny, 1, 1); err != ErrStoreFull {
		t.Errorf("a second job in a full store: %v, want %v", err, ErrStoreFull)
	}
}

// The accounting is the heap the store takes, give or take the allocator's
// rounding and the maps' growth: measured on the live heap after a
// collection, with no eviction.
func TestStoreAccountsItsHeap(t *testing.T) {
	const jobs, metrics, points = 500, paddlev1.MaxProgressMetrics, DefaultHistoryPoints
	live := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	now := time.Unix(1_700_000_000, 0)
	s := NewStore(Options{ReportRate: 1e9, ReportBurst: 1e9, TTL: 24 * time.Hour, MaxBytes: 1 << 40})
	s.now = func() time.Time { return now }
	before := live()
	fill(t, s, &now, jobs, metrics, points, nil)
	heap := float64(live()) - float64(before)
	accounted := float64(s.Bytes())
	runtime.KeepAlive(s)
	t.Logf("%d jobs × %d metrics × %d points: %.1f MiB accounted, %.1f MiB of heap", jobs, metrics, points, accounted/(1<<20), heap/(1<<20))
	if accounted < 0.85*heap || accounted > 1.15*heap {
		t.Errorf("accounted %.0f bytes for a heap of %.0f: want within 15%%", accounted, heap)
	}
}
