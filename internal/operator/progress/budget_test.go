package progress

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// simJob is one job of simulateReports: its status's progress as the
// controller last wrote it, when the controller comes back, and when its
// progress was copied.
type simJob struct {
	name    types.NamespacedName
	current *paddlev1.JobProgress
	next    time.Time
	copies  []time.Time
}

// simulateReports has n jobs report every second for d, on a fake clock in
// steps of tick, and plays the controller: a job is taken when the store
// asks for it (Events) or when the wait its last Take returned is over.
func simulateReports(t *testing.T, store *Store, clock *clocktesting.FakePassiveClock, n int, d, tick time.Duration) []*simJob {
	t.Helper()
	jobs := make([]*simJob, n)
	for i := range jobs {
		jobs[i] = &simJob{name: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("job-%04d", i)}}
	}
	byName := map[types.NamespacedName]*simJob{}
	for _, j := range jobs {
		byName[j.name] = j
	}
	start := clock.Now()
	for step := 0; clock.Now().Sub(start) < d; step++ {
		now := clock.Now()
		if step%int(time.Second/tick) == 0 {
			pct := float64(now.Sub(start)) / float64(d) * 99 // never the final 100%
			for _, j := range jobs {
				if err := store.Put(j.name, "uid", j.name.Name+"-worker-0", 0, Report{Percent: &pct}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for drained := false; !drained; {
			select {
			case ev := <-store.Events():
				j := byName[types.NamespacedName{Namespace: ev.Object.GetNamespace(), Name: ev.Object.GetName()}]
				j.next = now
			default:
				drained = true
			}
		}
		for _, j := range jobs {
			if j.next.IsZero() || now.Before(j.next) {
				continue
			}
			p, wait := store.Take(j.name, "uid", j.current, false)
			j.next = time.Time{}
			if wait > 0 {
				j.next = now.Add(wait)
			}
			if p != nil {
				j.current = p
				j.copies = append(j.copies, now)
			}
		}
		clock.SetTime(now.Add(tick))
	}
	return jobs
}

// Jobs reporting every second share one write budget: at a few jobs each
// report reaches the status within StatusInterval; at many the status
// writes stay within the status share of the budget, and each job's turn
// comes round within N/share, first come first served.
func TestWriteBudgetIsSharedByAllJobs(t *testing.T) {
	const budget = 50.0 // writes a second; statusShare of it for statuses
	share := budget * statusShare
	for _, tc := range []struct {
		jobs int
		// wantRate is the status writes a second once all report; maxGap
		// the longest a job may go without a copy.
		wantRate float64
		maxGap   time.Duration
	}{
		{jobs: 1, wantRate: 1, maxGap: 1100 * time.Millisecond},
		{jobs: 10, wantRate: 10, maxGap: 1100 * time.Millisecond},
		{jobs: 100, wantRate: share, maxGap: 2600 * time.Millisecond},   // 100/40 s
		{jobs: 1000, wantRate: share, maxGap: 25100 * time.Millisecond}, // 1000/40 s
	} {
		t.Run(fmt.Sprint(tc.jobs), func(t *testing.T) {
			clock := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
			store := NewStore(Options{StatusInterval: time.Second, WritesPerSecond: budget, MaxJobs: 2000, Clock: clock})
			const run, warm = 90 * time.Second, 30 * time.Second
			start := clock.Now()
			jobs := simulateReports(t, store, clock, tc.jobs, run, 50*time.Millisecond)
			writes, maxGap := 0, time.Duration(0)
			for _, j := range jobs {
				for i, c := range j.copies {
					if c.Sub(start) < warm {
						continue
					}
					writes++
					maxGap = max(maxGap, c.Sub(j.copies[i-1]))
				}
			}
			rate := float64(writes) / (run - warm).Seconds()
			t.Logf("%d jobs: %.1f status writes a second, longest %s between two copies of a job", tc.jobs, rate, maxGap)
			if rate > tc.wantRate*1.02+0.1 || rate < tc.wantRate*0.95 {
				t.Errorf("%.1f status writes a second, want %.1f", rate, tc.wantRate)
			}
			if rate > share+0.5 {
				t.Errorf("%.1f status writes a second, over the budget's status share %.0f", rate, share)
			}
			if maxGap > tc.maxGap {
				t.Errorf("a job went %s without a copy, want at most %s", maxGap, tc.maxGap)
			}
		})
	}
}

// A report reaches the status within StatusInterval: the store asks for
// the job's reconcile at the first report after a copy, and the Take of
// that reconcile says when the copy is due.
func TestEachReportIsCopiedWithinTheInterval(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	store := NewStore(Options{Clock: clock})
	jobs := simulateReports(t, store, clock, 1, 12*time.Second, 10*time.Millisecond)
	// Reports at 0, 1, ..., 11 s: each is copied within its second.
	if got := len(jobs[0].copies); got != 12 {
		t.Errorf("%d copies of 12 reports a second apart: %v", got, jobs[0].copies)
	}
	for i, c := range jobs[0].copies {
		if lag := c.Sub(time.Unix(1_700_000_000+int64(i), 0)); lag < 0 || lag >= time.Second {
			t.Errorf("report %d copied %s after it came", i, lag)
		}
	}
}

// A final copy is never delayed by the budget, however many jobs wait
// their turn, and is counted: the next job's turn comes later.
func TestFinalCopyIsImmediateAndCounted(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	store := NewStore(Options{WritesPerSecond: 10 / statusShare, Clock: clock}) // 10 copies a second
	pct := 50.0
	take := func(i int, final bool) time.Duration {
		job := types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("job-", i)}
		if err := store.Put(job, "uid", "w-0", 0, Report{Percent: &pct}); err != nil {
			t.Fatal(err)
		}
		p, wait := store.Take(job, "uid", nil, final)
		if (p == nil) != (wait > 0) {
			t.Fatalf("Take of job %d: %+v, wait %s", i, p, wait)
		}
		return wait
	}
	for i := range 20 {
		take(i, false)
	}
	if wait := take(20, false); wait < 1900*time.Millisecond {
		t.Errorf("the 21st job waits %s at 10 copies a second, want 2s", wait)
	}
	if wait := take(21, true); wait != 0 {
		t.Errorf("a final copy waits %s", wait)
	}
	if wait := take(22, false); wait < 2100*time.Millisecond {
		t.Errorf("the job after a final copy waits %s, want it counted (2.2s)", wait)
	}
}

// Histories are written within the history share of the budget, those
// written longest ago first, except a finished job's: written on the next
// tick, so its history holds every point as soon as it ends (a retry of it
// waits for the budget).
func TestHistoryShareAndFinalFlush(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	store := NewStore(Options{WritesPerSecond: 10 / (1 - statusShare), ReportRate: 100, ReportBurst: 100, Clock: clock}) // 10 histories a second
	job := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("job-%02d", i)}
	}
	put := func(i int) {
		if err := store.Put(job(i), "uid", "w-0", 0, Report{Metrics: Metrics{{"loss", 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		put(i)
	}
	written := map[types.NamespacedName]int{}
	for tick := range 3 {
		due := store.historyDue(clock.Now())
		if len(due) != 10 {
			t.Errorf("tick %d: %d histories written, want the share's 10", tick, len(due))
		}
		for k := range due {
			written[k]++
		}
		clock.SetTime(clock.Now().Add(historyTick))
	}
	if len(written) != 30 {
		t.Errorf("%d of 30 histories written in 3 ticks, want each once: %v", len(written), written)
	}
	// All 30 change again; job 7 finishes: its history goes first, and
	// counts against the share (9 others go with it).
	for i := range 30 {
		put(i)
	}
	store.Take(job(7), "uid", nil, true)
	due := store.historyDue(clock.Now())
	if _, ok := due[job(7)]; !ok || len(due) != 10 {
		t.Errorf("%d histories written, want the finished job's and 9 more", len(due))
	}
	// Its write failed: the retry waits for the budget, spent this tick.
	store.markDirty(job(7))
	if due := store.historyDue(clock.Now()); len(due) != 0 {
		t.Errorf("%d histories written again in the same tick, want the failed one to wait", len(due))
	}
}
