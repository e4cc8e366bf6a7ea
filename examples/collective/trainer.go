package collective

import (
	"context"
	"log"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// Config is one worker of a data-parallel job with a fixed ring.
type Config struct {
	// Endpoints is every worker's host:port in rank order; with one or none
	// this worker trains alone.
	Endpoints []string
	Rank      int
	// Job holds this worker's shard of the rows. Every worker's plan must
	// match rank 0's.
	Job            *ctr.Job
	ConnectTimeout time.Duration
	// PassDelay is a pause after each pass but the last, to make a job last
	// long enough to disturb it on purpose.
	PassDelay time.Duration
	Log       *log.Logger
}

// Train runs a worker to the end of the job. Rank 0 returns the job's
// result, the others nil.
func Train(ctx context.Context, cfg Config) (*ctr.Result, error) {
	job := cfg.Job
	if err := job.Plan.Validate(); err != nil {
		return nil, err
	}
	var st *ctr.State
	var resumedFrom string
	firstPass := 0
	if cfg.Rank == 0 {
		var err error
		if st, firstPass, resumedFrom, err = job.StartState(); err != nil {
			return nil, err
		}
		if resumedFrom != "" {
			cfg.Log.Printf("resuming from %s: %d of %d passes done", resumedFrom, firstPass, job.Plan.Passes)
		}
	}

	ring, err := Connect(ctx, RingConfig{Endpoints: cfg.Endpoints, Rank: cfg.Rank, ConnectTimeout: cfg.ConnectTimeout, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	defer ring.Close()

	w := newWorker(job, ring, cfg.PassDelay, cfg.Log)
	if err := w.start(st, firstPass); err != nil {
		return nil, err
	}
	return w.train(ctx, resumedFrom)
}
