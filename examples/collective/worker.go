package collective

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log"
	"math"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// worker is one worker's training in one ring.
type worker struct {
	job       *ctr.Job
	ring      *Ring
	passDelay time.Duration
	log       *log.Logger
	// membershipChanged is asked at every step; when it is true on any
	// rank, every rank stops at that step with errMembershipChanged. Nil
	// for a fixed ring.
	membershipChanged func() bool

	model        *ctr.Model
	meter        ctr.Meter
	state        *ctr.State
	stepsPerPass int
	nextPass     int // the first pass not yet trained
}

// errMembershipChanged ends an epoch whose membership was replaced.
var errMembershipChanged = errors.New("the membership changed")

func newWorker(job *ctr.Job, ring *Ring, passDelay time.Duration, logger *log.Logger) *worker {
	return &worker{job: job, ring: ring, passDelay: passDelay, log: logger, model: ctr.NewModel(job.Plan.Model)}
}

// start agrees with every rank on the plan and the first pass, and gives
// them all rank 0's state. st and firstPass matter on rank 0 only.
func (w *worker) start(st *ctr.State, firstPass int) error {
	first, err := w.agree(firstPass)
	if err != nil {
		return err
	}
	if w.state, err = w.broadcastState(st); err != nil {
		return err
	}
	w.nextPass = first
	return nil
}

// train runs the passes left, then waits at a barrier until rank 0 has
// checkpointed the last one, so that no worker leaves a job whose end is
// not saved. Rank 0 returns the job's result, the others nil. resumedFrom is
// the checkpoint rank 0 started from, if any.
func (w *worker) train(ctx context.Context, resumedFrom string) (*ctr.Result, error) {
	job := w.job
	var result *ctr.Result
	for w.nextPass < job.Plan.Passes {
		stats, err := w.runPass(w.nextPass)
		if err != nil {
			return nil, err
		}
		if w.ring.Rank() == 0 {
			var res ctr.Result
			if stats, res, err = job.EndPass(w.state, stats); err != nil {
				return nil, err
			}
			result = &res
		}
		w.log.Print(stats)
		w.nextPass++
		if w.nextPass < job.Plan.Passes {
			if err := sleep(ctx, w.passDelay); err != nil {
				return nil, err
			}
		}
	}
	if err := w.ring.AllReduce(make([]float64, 1)); err != nil {
		return nil, fmt.Errorf("wait for every rank to finish: %w", err)
	}
	if w.ring.Rank() == 0 && result == nil {
		// Resumed a job whose last pass was already checkpointed.
		res := job.Finished(w.state, resumedFrom)
		result = &res
	}
	return result, nil
}

// agree makes every worker check its plan against rank 0's and learn the
// first pass and how many steps a pass takes: enough for the longest shard.
// One all-reduce carries every worker's row count at its rank's index, and
// rank 0's plan fingerprint and first pass after them.
func (w *worker) agree(firstPass int) (int, error) {
	size, rank := w.ring.Size(), w.ring.Rank()
	hi, lo := planFingerprint(w.job.Plan)
	v := make([]float64, size+3)
	v[rank] = float64(len(w.job.Train))
	if rank == 0 {
		v[size], v[size+1], v[size+2] = hi, lo, float64(firstPass)
	}
	if err := w.ring.AllReduce(v); err != nil {
		return 0, fmt.Errorf("agree on the plan: %w", err)
	}
	if v[size] != hi || v[size+1] != lo {
		return 0, fmt.Errorf("rank %d's plan %+v differs from rank 0's", rank, w.job.Plan)
	}
	maxRows := 0.0
	for _, n := range v[:size] {
		maxRows = math.Max(maxRows, n)
	}
	if maxRows == 0 {
		return 0, fmt.Errorf("no worker has any rows to train on")
	}
	batch := w.job.Plan.BatchSize
	w.stepsPerPass = (int(maxRows) + batch - 1) / batch
	first := int(v[size+2])
	w.log.Printf("ring of %d ready: %s, %d steps per pass over %d rows",
		size, ctr.Remaining(first, w.job.Plan.Passes), w.stepsPerPass, len(w.job.Train))
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
	cfg := w.job.Plan.Model
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
	plan := w.job.Plan
	rows := w.job.Train
	size := plan.Model.Size()
	// The gradient, the number of rows it sums over, and the number of
	// ranks that saw the membership change.
	grad := make([]float64, size+2)
	params := plan.Model.View(w.state.Params)
	w.meter.Reset()
	for s := range w.stepsPerPass {
		lo := min(s*plan.BatchSize, len(rows))
		hi := min(lo+plan.BatchSize, len(rows))
		clear(grad)
		w.model.AccumulateBatch(params, rows[lo:hi], plan.Model.View(grad[:size]), &w.meter)
		grad[size] = float64(hi - lo)
		if w.membershipChanged != nil && w.membershipChanged() {
			grad[size+1] = 1
		}
		if err := w.ring.AllReduce(grad); err != nil {
			return ctr.PassStats{}, fmt.Errorf("pass %d step %d: %w", pass+1, s, err)
		}
		if grad[size+1] > 0 {
			return ctr.PassStats{}, fmt.Errorf("pass %d step %d: %w", pass+1, s, errMembershipChanged)
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

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
