package ctr

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
)

// Plan is the training setup every worker of a job must share.
type Plan struct {
	Model     Config  `json:"model"`
	Seed      uint64  `json:"seed"` // of the initial parameters (and, by convention, the data)
	LR        float64 `json:"lr"`   // Adagrad learning rate
	BatchSize int     `json:"batch_size"`
	Passes    int     `json:"passes"`
}

// DefaultPlan reaches close to the optimal AUC on the default data in a few
// seconds of 2-core time.
func DefaultPlan() Plan {
	return Plan{Model: DefaultConfig(), Seed: 1, LR: 0.1, BatchSize: 256, Passes: 5}
}

// Validate reports a plan training cannot follow.
func (p Plan) Validate() error {
	errs := []error{p.Model.Validate()}
	if !(p.LR > 0) {
		errs = append(errs, fmt.Errorf("learning rate must be positive, got %g", p.LR))
	}
	if p.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("batch size must be positive, got %d", p.BatchSize))
	}
	if p.Passes < 1 {
		errs = append(errs, fmt.Errorf("passes must be positive, got %d", p.Passes))
	}
	return errors.Join(errs...)
}

// Job is what one worker trains: the shared plan and its own rows. Worker 0
// also evaluates on the test rows and writes checkpoints.
type Job struct {
	Plan  Plan
	Train []Row // this worker's shard
	Test  []Row
	// OptimalAUC is the true model's AUC on Test, for the final report.
	OptimalAUC float64
	OutputDir  string
	// Resume continues from the latest complete checkpoint in OutputDir.
	Resume bool
}

// StartState is where worker 0 starts: the latest checkpoint when resuming
// and one exists, else the initial state. It returns the first pass to run
// and the directory of the checkpoint it resumed from, if any.
func (j *Job) StartState() (st *State, firstPass int, from string, err error) {
	if j.Resume {
		return j.ResumeState(math.MaxInt)
	}
	return NewState(j.Plan.Model, j.Plan.Seed), 0, "", nil
}

// ResumeState starts from the latest complete checkpoint of a pass below
// before, or from the initial state when there is none. An elastic job that
// knows it has finished passes up to before uses it to ignore checkpoints an
// older run may have left further on.
func (j *Job) ResumeState(before int) (st *State, firstPass int, from string, err error) {
	dir, err := LatestCheckpointBefore(j.OutputDir, before)
	if err != nil {
		return nil, 0, "", err
	}
	if dir == "" {
		return NewState(j.Plan.Model, j.Plan.Seed), 0, "", nil
	}
	ck, err := LoadCheckpoint(dir)
	if err != nil {
		return nil, 0, "", fmt.Errorf("resume: %w", err)
	}
	if ck.Config != j.Plan.Model {
		return nil, 0, "", fmt.Errorf("resume: checkpoint %s has model %+v, this job %+v", dir, ck.Config, j.Plan.Model)
	}
	return ck.State, ck.Pass + 1, dir, nil
}

// EndPass is worker 0's work after a pass: evaluate st on the test rows and
// checkpoint it. stats carries the pass's training metrics; the returned
// stats add the test AUC.
func (j *Job) EndPass(st *State, stats PassStats) (PassStats, Result, error) {
	stats.TestAUC = j.TestAUC(st)
	dir, err := SaveCheckpoint(j.OutputDir, &Checkpoint{
		Pass: stats.Pass, Seed: j.Plan.Seed, Loss: stats.Loss, TestAUC: stats.TestAUC, State: st,
	})
	if err != nil {
		return stats, Result{}, err
	}
	return stats, j.result(stats.TestAUC, dir), nil
}

// Finished is the result of a job that resumed from its last checkpoint with
// no pass left to run.
func (j *Job) Finished(st *State, checkpointDir string) Result {
	return j.result(j.TestAUC(st), checkpointDir)
}

func (j *Job) result(testAUC float64, dir string) Result {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return Result{TestAUC: testAUC, OptimalAUC: j.OptimalAUC, Passes: j.Plan.Passes, ModelDir: dir}
}

// TestAUC is the AUC of st on the test rows.
func (j *Job) TestAUC(st *State) float64 {
	_, auc := NewModel(st.Config).Evaluate(st.Config.View(st.Params), j.Test)
	return auc
}

// Remaining describes the passes left to run, for logs: "passes 3..5".
func Remaining(firstPass, passes int) string {
	if firstPass >= passes {
		return fmt.Sprintf("all %d passes already done", passes)
	}
	return fmt.Sprintf("passes %d..%d", firstPass+1, passes)
}

// PassStats is one line of a worker's training log.
type PassStats struct {
	Pass     int // 0-based
	Passes   int
	Loss     float64 // mean training loss over the worker's shard
	TrainAUC float64 // on the worker's shard, before each batch's update
	TestAUC  float64 // NaN on workers that do not evaluate
}

func (s PassStats) String() string {
	line := fmt.Sprintf("pass %d/%d: loss=%.4f train_auc=%.4f", s.Pass+1, s.Passes, s.Loss, s.TrainAUC)
	if !math.IsNaN(s.TestAUC) {
		line += fmt.Sprintf(" test_auc=%.4f", s.TestAUC)
	}
	return line
}

// Result is the outcome of a job, reported by worker 0.
type Result struct {
	TestAUC    float64
	OptimalAUC float64
	Passes     int
	ModelDir   string // absolute path of the last checkpoint
}

// String is the summary line tools grep for.
func (r Result) String() string {
	return fmt.Sprintf("final: test_auc=%.4f optimal_auc=%.4f passes=%d model=%s",
		r.TestAUC, r.OptimalAUC, r.Passes, r.ModelDir)
}
