package collective

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log"
	"math"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// Config is one worker of a data-parallel job.
type Config struct {
	// Endpoints is every worker's host:port in rank order; with one or none
	// this worker trains alone.
	Endpoints []string
	Rank      int
	// Job holds this worker's shard of the rows. Every worker's plan must
	// match rank 0's.
	Job            *ctr.Job
	ConnectTimeout time.Duration
	Log            *log.Logger
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

	w := &worker{cfg: cfg, ring: ring, model: ctr.NewModel(job.Plan.Model)}
	if firstPass, err = w.agree(firstPass); err != nil {
		return nil, err
	}
	if w.state, err = w.broadcastState(st); err != nil {
		return nil, err
	}

	var result *ctr.Result
	for pass := firstPass; pass < job.Plan.Passes; pass++ {
		stats, err := w.runPass(pass)
		if err != nil {
			return nil, err
		}
		if cfg.Rank == 0 {
			var res ctr.Result
			if stats, res, err = job.EndPass(w.state, stats); err != nil {
				return nil, err
			}
			result = &res
		}
		cfg.Log.Print(stats)
	}
	if cfg.Rank == 0 && result == nil {
		// Resumed a job whose last pass was already checkpointed.
		res := job.Finished(w.state, resumedFrom)
		result = &res
	}
	return result, nil
}

// worker is one worker's running job.
type worker struct {
	cfg          Config
	ring         *Ring
	model        *ctr.Model
	meter        ctr.Meter
	state        *ctr.State
	stepsPerPass int
}

// agree makes every worker check its plan against rank 0's and learn the
// first pass and how many steps a pass takes: enough for the longest shard.
// One all-reduce carries every worker's row count at its rank's index, and
// rank 0's plan fingerprint and first pass after them.
func (w *worker) agree(firstPass int) (int, error) {
	size, rank := w.ring.Size(), w.ring.Rank()
	hi, lo := planFingerprint(w.cfg.Job.Plan)
	v := make([]float64, size+3)
	v[rank] = float64(len(w.cfg.Job.Train))
	if rank == 0 {
		v[size], v[size+1], v[size+2] = hi, lo, float64(firstPass)
	}
	if err := w.ring.AllReduce(v); err != nil {
		return 0, fmt.Errorf("agree on the plan: %w", err)
	}
	if v[size] != hi || v[size+1] != lo {
		return 0, fmt.Errorf("rank %d's plan %+v differs from rank 0's", rank, w.cfg.Job.Plan)
	}
	maxRows := 0.0
	for _, n := range v[:size] {
		maxRows = math.Max(maxRows, n)
	}
	if maxRows == 0 {
		return 0, fmt.Errorf("no worker has any rows to train on")
	}
	batch := w.cfg.Job.Plan.BatchSize
	w.stepsPerPass = (int(maxRows) + batch - 1) / batch
	first := int(v[size+2])
	w.cfg.Log.Printf("ring of %d ready: %s, %d steps per pass over %d rows",
		size, ctr.Remaining(first, w.cfg.Job.Plan.Passes), w.stepsPerPass, len(w.cfg.Job.Train))
	return first, nil
}

// planFingerprint hashes a plan into two float64-exact halves.
func planFingerprint(p ctr.Plan) (hi, lo float64) {
	data, _ := json.Marshal(p) // a Plan always marshals
	h := fnv.New64a()
	h.Write(data)
	sum := binary.BigEndian.Uint64(h.Sum(nil))
	return float64(sum >> 32), float64(sum & math.MaxUint32)
}

// broadcastState gives every worker rank 0's starting state: an all-reduce
// where every other rank contributes zeros.
func (w *worker) broadcastState(st *ctr.State) (*ctr.State, error) {
	cfg := w.cfg.Job.Plan.Model
	n := cfg.Size()
	v := make([]float64, 2*n)
	if st != nil {
		copy(v, st.Params)
		copy(v[n:], st.Accum)
	}
	if err := w.ring.AllReduce(v); err != nil {
		return nil, fmt.Errorf("broadcast the starting state: %w", err)
	}
	return &ctr.State{Config: cfg, Params: v[:n:n], Accum: v[n:]}, nil
}

// runPass trains one pass over the worker's rows.
func (w *worker) runPass(pass int) (ctr.PassStats, error) {
	plan := w.cfg.Job.Plan
	rows := w.cfg.Job.Train
	size := plan.Model.Size()
	// The gradient, then the number of rows it sums over.
	grad := make([]float64, size+1)
	params := plan.Model.View(w.state.Params)
	w.meter.Reset()
	for s := range w.stepsPerPass {
		lo := min(s*plan.BatchSize, len(rows))
		hi := min(lo+plan.BatchSize, len(rows))
		clear(grad)
		w.model.AccumulateBatch(params, rows[lo:hi], plan.Model.View(grad[:size]), &w.meter)
		grad[size] = float64(hi - lo)
		if err := w.ring.AllReduce(grad); err != nil {
			return ctr.PassStats{}, fmt.Errorf("pass %d step %d: %w", pass+1, s, err)
		}
		if examples := grad[size]; examples > 0 {
			ctr.AdagradStep(plan.LR, w.state.Params, w.state.Accum, grad[:size], 1/examples)
		}
	}
	return ctr.PassStats{
		Pass: pass, Passes: plan.Passes,
		Loss: w.meter.Loss(), TrainAUC: w.meter.AUC(), TestAUC: math.NaN(),
	}, nil
}
