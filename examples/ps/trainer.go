package ps

import (
	"context"
	"fmt"
	"log"
	"math"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// TrainerConfig is one trainer of a job.
type TrainerConfig struct {
	// PServers is every pserver's host:port, in shard order.
	PServers  []string
	TrainerID int
	Trainers  int
	// Job holds this trainer's shard of the rows. Trainer 0's plan is the
	// job's; every other trainer's must match it.
	Job *ctr.Job
	// ConnectTimeout bounds the wait for pservers to come up.
	ConnectTimeout time.Duration
	Log            *log.Logger
}

// Train runs a trainer to the end of the job. Trainer 0 returns the job's
// result, the others nil.
func Train(ctx context.Context, cfg TrainerConfig) (*ctr.Result, error) {
	switch {
	case len(cfg.PServers) == 0:
		return nil, fmt.Errorf("no pserver endpoints")
	case cfg.TrainerID < 0 || cfg.TrainerID >= cfg.Trainers:
		return nil, fmt.Errorf("trainer id %d out of range [0, %d)", cfg.TrainerID, cfg.Trainers)
	}
	plan := cfg.Job.Plan
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	t := &trainer{
		cfg:    cfg,
		layout: layout{model: plan.Model, shards: len(cfg.PServers)},
		model:  ctr.NewModel(plan.Model),
	}

	var start *ctr.State
	var resumedFrom string
	firstPass := 0
	if cfg.TrainerID == 0 {
		var err error
		if start, firstPass, resumedFrom, err = cfg.Job.StartState(); err != nil {
			return nil, err
		}
		if resumedFrom != "" {
			cfg.Log.Printf("resuming from %s: %d of %d passes done", resumedFrom, firstPass, plan.Passes)
		}
	}

	ps, err := dialPServers(ctx, cfg.PServers, cfg.ConnectTimeout, cfg.Log.Printf)
	if err != nil {
		return nil, err
	}
	defer ps.close()
	t.ps = ps
	if firstPass, err = t.join(start, firstPass); err != nil {
		return nil, err
	}

	var result *ctr.Result
	for pass := firstPass; pass < plan.Passes; pass++ {
		stats, err := t.runPass(pass)
		if err != nil {
			return nil, err
		}
		if cfg.TrainerID == 0 {
			st, err := t.fetchState((pass + 1) * t.stepsPerPass)
			if err != nil {
				return nil, err
			}
			var res ctr.Result
			if stats, res, err = cfg.Job.EndPass(st, stats); err != nil {
				return nil, err
			}
			result = &res
		}
		cfg.Log.Print(stats)
	}
	if cfg.TrainerID == 0 && result == nil {
		// Resumed a job whose last pass was already checkpointed.
		st, err := t.fetchState(firstPass * t.stepsPerPass)
		if err != nil {
			return nil, err
		}
		res := cfg.Job.Finished(st, resumedFrom)
		result = &res
	}
	_, err = ps.callAll(func(int) *request { return &request{Done: &done{TrainerID: cfg.TrainerID}} })
	if err != nil {
		return nil, err
	}
	return result, nil
}

// trainer is one trainer's running job.
type trainer struct {
	cfg          TrainerConfig
	ps           *pservers
	layout       layout
	model        *ctr.Model
	meter        ctr.Meter
	stepsPerPass int
}

// join says hello to every pserver, trainer 0 handing each its starting
// shard, and returns the pass the job starts at.
func (t *trainer) join(start *ctr.State, firstPass int) (int, error) {
	replies, err := t.ps.callAll(func(shard int) *request {
		h := &hello{TrainerID: t.cfg.TrainerID, Trainers: t.cfg.Trainers, Rows: len(t.cfg.Job.Train), Plan: t.cfg.Job.Plan}
		if start != nil {
			h.Init, h.FirstPass = t.layout.split(start, shard), firstPass
		}
		return &request{Hello: h}
	})
	if err != nil {
		return 0, fmt.Errorf("join: %w", err)
	}
	first := *replies[0].Hello
	for i, r := range replies {
		if *r.Hello != first {
			return 0, fmt.Errorf("join: pservers disagree: pserver 0 says %+v, pserver %d %+v", first, i, *r.Hello)
		}
	}
	t.stepsPerPass = first.StepsPerPass
	t.cfg.Log.Printf("joined %d pservers: %s, %d steps per pass over %d rows",
		len(t.ps.conns), ctr.Remaining(first.FirstPass, t.cfg.Job.Plan.Passes), first.StepsPerPass, len(t.cfg.Job.Train))
	return first.FirstPass, nil
}

// runPass trains one pass over the trainer's rows.
func (t *trainer) runPass(pass int) (ctr.PassStats, error) {
	rows, size := t.cfg.Job.Train, t.cfg.Job.Plan.BatchSize
	t.meter.Reset()
	for s := range t.stepsPerPass {
		lo := min(s*size, len(rows))
		hi := min(lo+size, len(rows))
		if err := t.step(pass*t.stepsPerPass+s, rows[lo:hi]); err != nil {
			return ctr.PassStats{}, fmt.Errorf("pass %d step %d: %w", pass+1, s, err)
		}
	}
	return ctr.PassStats{
		Pass: pass, Passes: t.cfg.Job.Plan.Passes,
		Loss: t.meter.Loss(), TrainAUC: t.meter.AUC(), TestAUC: math.NaN(),
	}, nil
}

// step pulls the parameters batch needs, computes its gradient and pushes
// it. An empty batch still pushes: the pservers' barrier counts on it.
func (t *trainer) step(step int, batch []ctr.Row) error {
	cfg := t.layout.model
	w := cfg.RowWidth()
	byShard := make([][]uint32, t.layout.shards)
	seen := make(map[uint32]bool)
	for i := range batch {
		for _, b := range cfg.RowBuckets(&batch[i]) {
			if !seen[b] {
				seen[b] = true
				byShard[t.layout.owner(b)] = append(byShard[t.layout.owner(b)], b)
			}
		}
	}

	gradRows := ctr.RowMap{}
	grad := ctr.Params{Dense: make([]float64, cfg.DenseSize()), Rows: gradRows}
	var lossSum float64
	if len(batch) > 0 {
		params, err := t.pull(step, byShard)
		if err != nil {
			return err
		}
		for b := range seen {
			gradRows[b] = make([]float64, w)
		}
		lossSum = t.model.AccumulateBatch(params, batch, grad, &t.meter)
	}

	_, err := t.ps.callAll(func(shard int) *request {
		lo, hi := t.layout.denseRange(shard)
		p := &push{Step: step, TrainerID: t.cfg.TrainerID, Examples: len(batch), LossSum: lossSum, Buckets: byShard[shard]}
		if len(batch) > 0 {
			p.Dense = grad.Dense[lo:hi]
			p.Rows = make([]float64, 0, len(p.Buckets)*w)
			for _, b := range p.Buckets {
				p.Rows = append(p.Rows, grad.Rows.Row(b)...)
			}
		}
		return &request{Push: p}
	})
	return err
}

// pull fetches the parameters of a step: the whole dense part and the rows
// of the given buckets, grouped by the shard that owns them.
func (t *trainer) pull(step int, byShard [][]uint32) (ctr.Params, error) {
	cfg := t.layout.model
	w := cfg.RowWidth()
	replies, err := t.ps.callAll(func(shard int) *request {
		return &request{Pull: &pull{Step: step, Buckets: byShard[shard]}}
	})
	if err != nil {
		return ctr.Params{}, err
	}
	params := ctr.Params{Dense: make([]float64, cfg.DenseSize())}
	rows := ctr.RowMap{}
	for shard, r := range replies {
		lo, hi := t.layout.denseRange(shard)
		if len(r.Pull.Dense) != hi-lo || len(r.Pull.Rows) != len(byShard[shard])*w {
			return ctr.Params{}, fmt.Errorf("pserver %d answered a pull with %d dense and %d sparse values, want %d and %d",
				shard, len(r.Pull.Dense), len(r.Pull.Rows), hi-lo, len(byShard[shard])*w)
		}
		copy(params.Dense[lo:hi], r.Pull.Dense)
		for k, b := range byShard[shard] {
			rows[b] = r.Pull.Rows[k*w : (k+1)*w]
		}
	}
	params.Rows = rows
	return params, nil
}

// fetchState gathers every shard once step steps are applied.
func (t *trainer) fetchState(step int) (*ctr.State, error) {
	replies, err := t.ps.callAll(func(int) *request { return &request{Dump: &dump{Step: step}} })
	if err != nil {
		return nil, fmt.Errorf("fetch parameters: %w", err)
	}
	cfg := t.layout.model
	st := &ctr.State{Config: cfg, Params: make([]float64, cfg.Size()), Accum: make([]float64, cfg.Size())}
	for shard, r := range replies {
		if err := t.layout.merge(st, shard, r.Dump); err != nil {
			return nil, fmt.Errorf("fetch parameters: %w", err)
		}
	}
	return st, nil
}
