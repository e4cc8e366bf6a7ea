package collective

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// ElasticConfig is one worker of a job whose workers may die and be
// replaced, or be added and removed, while it trains.
type ElasticConfig struct {
	// Self is this worker's endpoint, character for character as the
	// membership lists it.
	Self string
	// Membership is where the operator publishes the job's workers.
	Membership MembershipDir
	// Job is the plan every worker shares, the test rows (any worker may
	// become rank 0) and the output directory, which every worker must
	// share. Its Train rows are not used: Shard gives each epoch's.
	Job *ctr.Job
	// Shard is this worker's training rows as rank of a ring of workers.
	Shard func(workers, rank int) []ctr.Row
	// ConnectTimeout bounds resolving this worker's own address.
	ConnectTimeout time.Duration
	// RendezvousTimeout bounds each wait for the members of an epoch.
	RendezvousTimeout time.Duration
	// PassDelay is a pause after each pass but the last.
	PassDelay time.Duration
	Log       *log.Logger
}

const (
	// membershipPoll is how often a worker re-reads the membership.
	membershipPoll = 500 * time.Millisecond
	// linkTimeout bounds forming the ring of an epoch: its members have
	// just joined, so they are up.
	linkTimeout = 30 * time.Second
)

// TrainElastic runs a worker until the job is done, in epochs: each starts
// with a rendezvous of the current members and ends with the job, or when a
// member fails or the membership changes. Every epoch starts from the last
// complete checkpoint. The worker returns nil, nil when it is no longer a
// member; rank 0 of the last epoch returns the job's result, the others nil.
func TrainElastic(ctx context.Context, cfg ElasticConfig) (*ctr.Result, error) {
	if err := cfg.Job.Plan.Validate(); err != nil {
		return nil, err
	}
	view, err := cfg.Membership.Read()
	if err != nil {
		return nil, err
	}
	if view.Rank(cfg.Self) < 0 {
		cfg.Log.Printf("%s is not in the job's membership (%s): leaving", cfg.Self, view)
		return nil, nil
	}
	h, err := listenHub(ctx, cfg.Self, cfg.ConnectTimeout, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	cfg.Log.Printf("listening on %s, membership in %s (%s)", cfg.Self, cfg.Membership, view)

	t := &elasticTrainer{cfg: cfg, hub: h, rdv: &rendezvous{
		self: cfg.Self, dir: cfg.Membership, hub: h, timeout: cfg.RendezvousTimeout,
		poll: membershipPoll, log: cfg.Log, progress: -1, finished: finishedSince(cfg.Job, time.Now()),
	}}
	for {
		ag, err := t.rdv.run(ctx)
		switch {
		case errors.Is(err, errScaledAway):
			cfg.Log.Printf("%s is %v: leaving", cfg.Self, err)
			return nil, nil
		case errors.Is(err, errJobFinished):
			cfg.Log.Printf("%v before %s could join: leaving", err, cfg.Self)
			return nil, nil
		case err != nil:
			return nil, err
		}
		result, err := t.runEpoch(ctx, ag)
		switch {
		case err == nil:
			turnAwayLateJoiners(h)
			return result, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case isBrokenRing(err) || errors.Is(err, errMembershipChanged):
			cfg.Log.Printf("epoch %d ends: %v", ag.epoch.Number, err)
		default:
			return nil, err
		}
	}
}

type elasticTrainer struct {
	cfg ElasticConfig
	hub *hub
	rdv *rendezvous
}

// runEpoch forms the epoch's ring and trains in it until the job ends or
// the ring breaks.
func (t *elasticTrainer) runEpoch(ctx context.Context, ag *agreement) (*ctr.Result, error) {
	cfg := t.cfg
	size := len(ag.epoch.Members)
	ring, err := link(ctx, t.hub, RingConfig{Endpoints: ag.epoch.Members, Rank: ag.rank, ConnectTimeout: linkTimeout, Log: cfg.Log}, ag.epoch.ID)
	if err != nil {
		return nil, err
	}
	defer ring.Close()

	job := *cfg.Job
	job.Train = cfg.Shard(size, ag.rank)
	var st *ctr.State
	var firstPass int
	var resumedFrom string
	if ag.rank == 0 {
		if st, firstPass, resumedFrom, err = t.startState(ag.progress); err != nil {
			return nil, err
		}
	}
	w := newWorker(&job, ring, cfg.PassDelay, cfg.Log)
	watch := &membershipWatch{dir: cfg.Membership, baseline: ag.view, every: membershipPoll, log: cfg.Log}
	w.membershipChanged = watch.changed
	if err := w.start(st, firstPass); err != nil {
		return nil, err
	}
	t.rdv.progress, t.rdv.epoch = w.nextPass, ag.epoch.Number
	cfg.Log.Printf("epoch %d: rank %d of %d, %s, state %016x",
		ag.epoch.Number, ag.rank, size, ctr.Remaining(w.nextPass, job.Plan.Passes), w.state.Fingerprint())
	result, err := w.train(ctx, resumedFrom)
	t.rdv.progress = w.nextPass
	return result, err
}

// startState is where rank 0 starts an epoch. When no member has trained
// yet, the job starts as configured: afresh, or from the latest checkpoint
// with Resume. Otherwise it resumes from the latest complete checkpoint
// before the furthest pass a member knows to be reached, so that passes an
// older run left in the directory are ignored.
func (t *elasticTrainer) startState(progress int) (*ctr.State, int, string, error) {
	job, logger := t.cfg.Job, t.cfg.Log
	var st *ctr.State
	var firstPass int
	var from string
	var err error
	if progress < 0 {
		st, firstPass, from, err = job.StartState()
	} else {
		st, firstPass, from, err = job.ResumeState(progress)
	}
	switch {
	case err != nil:
		return nil, 0, "", err
	case from != "":
		logger.Printf("resuming from %s: %d of %d passes done", from, firstPass, job.Plan.Passes)
	case progress > 0:
		logger.Printf("no complete checkpoint before pass %d in %s: starting over", progress+1, job.OutputDir)
	}
	return st, firstPass, from, nil
}

// finishedSince tells whether the job's last checkpoint was completed after
// start. A worker that sees it while the coordinator is gone joined a job
// that ended meanwhile; a last checkpoint from before it started may be left
// over from an older run.
func finishedSince(job *ctr.Job, start time.Time) func() bool {
	last := ctr.PassDir(job.OutputDir, job.Plan.Passes-1)
	return func() bool {
		at, ok := ctr.CompletedAt(last)
		return ok && at.After(start)
	}
}
