package progress

import (
	"errors"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Defaults of Options.
const (
	// DefaultStatusInterval and DefaultHistoryFlush: a report shows in
	// the status, and in the history's curve, within a second or two
	// while few jobs report; DefaultWritesPerSecond bounds what that costs
	// when many do.
	DefaultStatusInterval = time.Second
	DefaultReportRate     = 1.0
	DefaultReportBurst    = 5
	DefaultHistoryPoints  = 240
	DefaultHistoryFlush   = time.Second
	DefaultTTL            = 30 * time.Minute
	DefaultMaxJobs        = 5000
	// DefaultWritesPerSecond is the API server writes all jobs' reports
	// may cost together: a PaddleJob status update costs the
	// kube-apiserver about 12 ms of CPU (docs/benchmarks.md), so 50 a
	// second are under two thirds of a core, and 1,000 jobs reporting
	// every second each see their status follow within 25 s.
	DefaultWritesPerSecond = 50.0
	// DefaultMaxBytes is the store's budget: 64 MiB. The chart limits the
	// operator to 512 MiB; without reports it peaked at 186 MiB RSS with
	// 1000 jobs of 4 pods (docs/benchmarks.md), and the Go collector lets
	// the heap grow to twice what is live, so a full store costs up to
	// 128 MiB more: 314 MiB, leaving about 200 MiB for more jobs and pods.
	DefaultMaxBytes = 64 << 20
)

// Options bound what the store keeps and how often reports reach a job's
// status.
type Options struct {
	// StatusInterval is the least time between two copies of a job's
	// progress into its status (a final report, at 100%, or the job's last
	// status write, is copied at once): a chatty trainer costs at most
	// 60s/StatusInterval status writes a minute.
	StatusInterval time.Duration
	// WritesPerSecond is the budget of the writes the reports of all jobs
	// cause together: status copies get statusShare of it, history
	// ConfigMap writes the rest. A copy due past the budget waits its turn
	// (first come, first served), so with N jobs reporting, each job's
	// status follows within about N/(statusShare*WritesPerSecond).
	// Final copies and histories are never delayed, and are counted.
	WritesPerSecond float64
	// ReportRate and ReportBurst limit the reports of one pod; the others
	// are refused with 429.
	ReportRate  float64
	ReportBurst int
	// HistoryPoints bounds each metric's recorded curve: when full, every
	// other point is dropped, so the curve keeps its whole span.
	HistoryPoints int
	// HistoryFlush is the least time between two writes of a job's history
	// ConfigMap while it runs; once its status is final, its history is
	// written on the writer's next tick.
	HistoryFlush time.Duration
	// TTL forgets a job no report came for in that long.
	TTL time.Duration
	// MaxJobs bounds the jobs the store holds: reports of further jobs are
	// refused until some are forgotten.
	MaxJobs int
	// MaxBytes bounds the memory the store holds, as it accounts it (the
	// size of each job's entry, reporting pods, latest report and curves;
	// see accounting.go). Over it, the store forgets the finished jobs
	// whose history is written, then halves the curves of the jobs whose
	// latest report is oldest (keeping their span, down to
	// minThinnedPoints points); a report of a job not held yet is refused
	// while the store is full.
	MaxBytes int64
	// Clock is the store's time; the real clock when nil.
	Clock clock.PassiveClock
}

func (o Options) withDefaults() Options {
	if o.StatusInterval <= 0 {
		o.StatusInterval = DefaultStatusInterval
	}
	if o.ReportRate <= 0 {
		o.ReportRate = DefaultReportRate
	}
	if o.ReportBurst <= 0 {
		o.ReportBurst = DefaultReportBurst
	}
	if o.HistoryPoints < 2 {
		o.HistoryPoints = DefaultHistoryPoints
	}
	if o.HistoryFlush <= 0 {
		o.HistoryFlush = DefaultHistoryFlush
	}
	if o.WritesPerSecond <= 0 {
		o.WritesPerSecond = DefaultWritesPerSecond
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxJobs <= 0 {
		o.MaxJobs = DefaultMaxJobs
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	return o
}

// Point is one recorded value of a metric, and the training step it was
// reported at (the report's step, else the latest one reported; nil when
// none was), so a curve can be drawn against steps as well as time.
type Point struct {
	Time  time.Time
	Value float64
	Step  *int64
}

// Store keeps the latest progress report of each job, in memory, until the
// controller copies it into the job's status. It never writes to the API
// server itself: it asks for the job's reconcile on Events.
type Store struct {
	opts  Options
	now   func() time.Time
	event chan event.GenericEvent
	// statusWrites and historyWrites hand out the write budget's shares;
	// reservations are made under mu, in the order jobs become due.
	statusWrites, historyWrites *rate.Limiter

	mu   sync.Mutex
	jobs map[types.NamespacedName]*jobEntry
	// bytes is the size accounted to the jobs held: the sum of their
	// entries' bytes.
	bytes int64
	// futileAt is the size at which shrinking last left the store over
	// its target (0: it did not), so it is not tried again at each report.
	futileAt int64
}

type jobEntry struct {
	uid types.UID
	// pods are the reporters' limiters and ranks, by pod name.
	pods map[string]*podEntry
	// leader is the reporting pod of lowest rank: the status follows it.
	leader     string
	leaderRank int
	// report is the leader's latest report, its metrics merged with those
	// it reported before; at is when it came.
	report Report
	at     time.Time
	// lastPod and lastAt are the pod of the latest report of any pod and
	// when it came: a report from any pod is progress (the progress
	// deadline), whichever the status follows.
	lastPod string
	lastAt  time.Time
	// first is the leader's first report with a percent, for the ETA.
	firstAt      time.Time
	firstPercent float64
	// lastCopy is when the controller last copied the progress into the
	// status; notified when a reconcile was last asked for (zero once
	// served); slot when the next copy may be written, as the budget
	// reserved it (zero: none reserved).
	lastCopy, notified, slot time.Time
	// history is each metric's curve, in the order first reported;
	// flushed is when it was last written out, dirty whether it changed.
	history map[string][]Point
	order   []string
	flushed time.Time
	dirty   bool
	// retried: a write of the history failed, so it is written again
	// within the budget only.
	retried bool
	// finished: the job's status is final (Take was told so); it gets no
	// more reports and goes first when the store is over its budget.
	finished bool
	// bytes is the entry's accounted size (accounting.go).
	bytes int64
}

type podEntry struct {
	limiter *rate.Limiter
}

// NewStore returns an empty store.
func NewStore(opts Options) *Store {
	now := time.Now
	if opts.Clock != nil {
		now = opts.Clock.Now
	}
	opts = opts.withDefaults()
	status, history := opts.WritesPerSecond*statusShare, opts.WritesPerSecond*(1-statusShare)
	return &Store{
		opts:  opts,
		now:   now,
		event: make(chan event.GenericEvent, 1024),
		jobs:  map[types.NamespacedName]*jobEntry{},
		// A burst of one: status copies are spread evenly. The history
		// writer takes its share once a tick, so a tick's worth at once.
		statusWrites:  rate.NewLimiter(rate.Limit(status), 1),
		historyWrites: rate.NewLimiter(rate.Limit(history), max(1, int(history*historyTick.Seconds()))),
	}
}

// Options are the store's bounds.
func (s *Store) Options() Options { return s.opts }

// Events carries a job whose progress is due in its status; the controller
// watches it (a source.Channel).
func (s *Store) Events() <-chan event.GenericEvent { return s.event }

// putResult says what became of a report.
type putResult int

const (
	accepted putResult = iota
	rateLimited
	storeFull
)

// put stores a report of pod (of rank: lower is followed first) of job.
func (s *Store) put(job types.NamespacedName, uid types.UID, pod string, rank int, rep Report) putResult {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobs[job]
	if e != nil && e.uid != uid {
		e = nil // a new job of the same name
	}
	if e == nil {
		if len(s.jobs) >= s.opts.MaxJobs || s.bytes+newJobBytes(job, pod) > s.opts.MaxBytes {
			s.sweepLocked(now)
			s.shrinkLocked(newJobBytes(job, pod))
			if len(s.jobs) >= s.opts.MaxJobs || s.bytes+newJobBytes(job, pod) > s.opts.MaxBytes {
				return storeFull
			}
		}
		if old := s.jobs[job]; old != nil {
			s.bytes -= old.bytes
		}
		e = &jobEntry{uid: uid, pods: map[string]*podEntry{}, history: map[string][]Point{}, leaderRank: -1}
		s.jobs[job] = e
		s.accountLocked(e, entryBytes(job))
	}
	defer s.shrinkLocked(0)
	p := e.pods[pod]
	if p == nil {
		p = &podEntry{limiter: rate.NewLimiter(rate.Limit(s.opts.ReportRate), s.opts.ReportBurst)}
		e.pods[pod] = p
		s.accountLocked(e, podBytes(pod))
	}
	if !p.limiter.AllowN(now, 1) {
		return rateLimited
	}
	e.lastPod, e.lastAt = pod, now
	reportBefore := reportBytes(e.report)
	switch {
	case e.leaderRank < 0 || rank < e.leaderRank:
		// A new leader: its progress replaces the old one's.
		e.leader, e.leaderRank = pod, rank
		e.report, e.firstAt = Report{}, time.Time{}
	case pod != e.leader:
		return accepted // kept for its rate limit only; the status follows the leader
	}
	e.report = merge(e.report, rep)
	s.accountLocked(e, reportBytes(e.report)-reportBefore)
	e.at = now
	if rep.Percent != nil && e.firstAt.IsZero() {
		e.firstAt, e.firstPercent = now, *rep.Percent
	}
	for _, m := range rep.Metrics {
		s.recordLocked(e, m, e.report.Step, now)
	}
	// A reconcile already asked for, or due at the reserved slot, takes
	// this report too; one that went astray is asked for again.
	if e.notified.IsZero() || now.Sub(later(e.notified, e.slot)) > 2*s.opts.StatusInterval {
		select {
		case s.event <- event.GenericEvent{Object: jobObject(job)}:
			e.notified = now
		default: // the controller is behind: a later report asks again
		}
	}
	return accepted
}

// merge is the latest report with the metrics of the earlier ones it does
// not repeat (a trainer may report loss every step and AUC every epoch).
func merge(old, rep Report) Report {
	out := rep
	out.Metrics = append(Metrics(nil), rep.Metrics...)
	have := map[string]bool{}
	for _, m := range rep.Metrics {
		have[m.Name] = true
	}
	for _, m := range old.Metrics {
		if !have[m.Name] && len(out.Metrics) < paddlev1.MaxProgressMetrics {
			out.Metrics = append(out.Metrics, m)
		}
	}
	// Keep the order metrics were first reported in, so columns stay put.
	pos := map[string]int{}
	for i, m := range old.Metrics {
		pos[m.Name] = i
	}
	sort.SliceStable(out.Metrics, func(i, j int) bool {
		pi, iok := pos[out.Metrics[i].Name]
		pj, jok := pos[out.Metrics[j].Name]
		switch {
		case iok && jok:
			return pi < pj
		case iok != jok:
			return iok
		}
		return false
	})
	if rep.Percent == nil {
		out.Percent = old.Percent
	}
	if rep.Epoch == nil {
		out.Epoch = old.Epoch
	}
	if rep.TotalEpochs == nil {
		out.TotalEpochs = old.TotalEpochs
	}
	if rep.Step == nil {
		out.Step = old.Step
	}
	return out
}

func (s *Store) recordLocked(e *jobEntry, m Metric, step *int64, now time.Time) {
	pts, ok := e.history[m.Name]
	if !ok {
		if len(e.order) >= paddlev1.MaxProgressMetrics {
			return
		}
		e.order = append(e.order, m.Name)
	}
	before := seriesBytes(m.Name, pts, ok)
	if len(pts) >= s.opts.HistoryPoints {
		// Halve the curve's resolution, keeping its first and latest points.
		kept := pts[:0]
		for i := 0; i < len(pts); i += 2 {
			kept = append(kept, pts[i])
		}
		pts = kept
	}
	var at *int64
	if step != nil {
		at = new(*step)
	}
	pts = append(pts, Point{Time: now, Value: m.Value, Step: at})
	e.history[m.Name] = pts
	s.accountLocked(e, seriesBytes(m.Name, pts, true)-before)
	e.dirty = true
}

// Take returns the progress due in the status of job (its UID uid), whose
// status holds current: nil when there is nothing new, or it is not due
// yet, and then wait is when it is. final says the pass writes the job's
// status anyway (the job finishes): the latest is taken whatever the
// interval.
func (s *Store) Take(job types.NamespacedName, uid types.UID, current *paddlev1.JobProgress, final bool) (p *paddlev1.JobProgress, wait time.Duration) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobs[job]
	if e == nil || e.uid != uid {
		return nil, 0
	}
	e.finished = e.finished || final
	if e.at.IsZero() {
		return nil, 0
	}
	latest := e.report.toStatus(e.leader, e.at, s.etaLocked(e))
	if equality.Semantic.DeepEqual(latest, current) {
		e.notified = time.Time{}
		return nil, 0
	}
	done := latest.Percent != nil && *latest.Percent >= 100
	if wait := s.statusDueLocked(e, now, final || done); wait > 0 {
		return nil, wait
	}
	e.lastCopy, e.notified, e.slot = now, time.Time{}, time.Time{}
	return latest, 0
}

// LastReport says when the latest report of job (its UID uid) came, from
// any of its pods, and from which pod; a zero time when none came since the
// operator started (or the job was forgotten).
func (s *Store) LastReport(job types.NamespacedName, uid types.UID) (pod string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobs[job]
	if e == nil || e.uid != uid {
		return "", time.Time{}
	}
	return e.lastPod, e.lastAt
}

// etaLocked estimates the leader's remaining time from the rate its
// percent rose since its first report; negative when it cannot.
func (s *Store) etaLocked(e *jobEntry) time.Duration {
	if e.report.Percent == nil || e.firstAt.IsZero() {
		return -1
	}
	p := *e.report.Percent
	elapsed := e.at.Sub(e.firstAt)
	if p <= e.firstPercent || elapsed <= 0 {
		return -1
	}
	return time.Duration(float64(elapsed) * (100 - p) / (p - e.firstPercent))
}

// Forget drops a job (deleted, or finished and recorded).
func (s *Store) Forget(job types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(job)
}

func (s *Store) forgetLocked(job types.NamespacedName) {
	if e := s.jobs[job]; e != nil {
		s.bytes -= e.bytes
		delete(s.jobs, job)
	}
}

// sweepLocked forgets the jobs no report came for within the TTL.
func (s *Store) sweepLocked(now time.Time) {
	for k, e := range s.jobs {
		if now.Sub(e.at) > s.opts.TTL && !e.dirty {
			s.forgetLocked(k)
		}
	}
}

// snapshot is one job's state for the metrics collector.
type snapshot struct {
	job     types.NamespacedName
	percent *float64
	metrics Metrics
}

func (s *Store) snapshots() []snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]snapshot, 0, len(s.jobs))
	for k, e := range s.jobs {
		if e.at.IsZero() {
			continue
		}
		out = append(out, snapshot{job: k, percent: e.report.Percent, metrics: append(Metrics(nil), e.report.Metrics...)})
	}
	return out
}

// jobObject is the object of a job's reconcile request.
func jobObject(job types.NamespacedName) client.Object {
	return &paddlev1.PaddleJob{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name}}
}

// Errors of Put.
var (
	ErrRateLimited = errors.New("the pod reports more often than the rate limit")
	ErrStoreFull   = errors.New("the store holds the progress of MaxJobs jobs already")
)

// Put stores a report of pod (of rank: lower is followed first, see the
// server's rank) of the job whose UID is uid, as the endpoint does once it
// has authenticated it.
func (s *Store) Put(job types.NamespacedName, uid types.UID, pod string, rank int, rep Report) error {
	if err := rep.Validate(); err != nil {
		return err
	}
	switch s.put(job, uid, pod, rank, rep) {
	case rateLimited:
		return ErrRateLimited
	case storeFull:
		return ErrStoreFull
	}
	return nil
}
