package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// trainFlags are the flags every training command takes.
type trainFlags struct {
	output         string
	passes         int
	batchSize      int
	lr             float64
	rows           int
	testRows       int
	seed           uint64
	resume         bool
	connectTimeout time.Duration
	data           string
	model          ctr.Config
}

// Defaults of the data set sizes: a 2-pserver, 2-trainer run takes a few
// seconds on two cores.
const (
	defaultRows     = 100_000
	defaultTestRows = 20_000
)

func (f *trainFlags) register(fs *flag.FlagSet) {
	plan := ctr.DefaultPlan()
	output := os.Getenv("PADDLE_OUTPUT_DIR")
	if output == "" {
		output = "./output"
	}
	fs.StringVar(&f.output, "output", output, "directory of the pass-NNNNN checkpoints; $PADDLE_OUTPUT_DIR sets the default")
	fs.IntVar(&f.passes, "passes", plan.Passes, "passes over the training rows")
	fs.IntVar(&f.batchSize, "batch-size", plan.BatchSize, "rows per step on each worker")
	fs.Float64Var(&f.lr, "lr", plan.LR, "Adagrad learning rate")
	fs.IntVar(&f.rows, "rows", defaultRows, "training rows generated, shared out among the workers")
	fs.IntVar(&f.testRows, "test-rows", defaultTestRows, "test rows generated for worker 0's evaluation")
	fs.Uint64Var(&f.seed, "seed", plan.Seed, "seed of the synthetic data and of the initial parameters")
	fs.BoolVar(&f.resume, "resume", false, "continue from the latest complete checkpoint in the output directory")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", 5*time.Minute, "how long to wait for peers to come up")
	fs.StringVar(&f.data, "data", "", "read this worker's training rows from this text file instead of generating them")
	fs.IntVar(&f.model.Buckets, "buckets", plan.Model.Buckets, "hash buckets of the sparse features")
	fs.IntVar(&f.model.EmbedDim, "embed-dim", plan.Model.EmbedDim, "embedding size of each bucket")
	fs.IntVar(&f.model.Hidden, "hidden", plan.Model.Hidden, "width of the deep part's hidden layer")
}

func (f *trainFlags) plan() ctr.Plan {
	return ctr.Plan{Model: f.model, Seed: f.seed, LR: f.lr, BatchSize: f.batchSize, Passes: f.passes}
}

// job is worker id of workers' job: its shard of the generated rows (or its
// data file) and, on worker 0, the test rows.
func (f *trainFlags) job(workers, id int) (*ctr.Job, error) {
	job, rows, err := f.jobRows(id == 0)
	if err != nil {
		return nil, err
	}
	job.Train = f.shard(rows, workers, id)
	return job, nil
}

// jobRows is the job without its training rows, and the rows: every
// generated row, or those of the data file. withTest generates the test rows.
func (f *trainFlags) jobRows(withTest bool) (*ctr.Job, []ctr.Row, error) {
	plan := f.plan()
	if err := plan.Validate(); err != nil {
		return nil, nil, usageError{err}
	}
	if f.rows < 0 || f.testRows < 1 {
		return nil, nil, usagef("--rows must be at least 0 and --test-rows at least 1")
	}
	src := ctr.NewSource(f.seed)
	job := &ctr.Job{Plan: plan, OutputDir: f.output, Resume: f.resume}
	if withTest {
		job.Test = src.Rows(ctr.TestSplit, f.testRows)
		job.OptimalAUC = src.OptimalAUC(job.Test)
	}
	if f.data != "" {
		rows, err := readRows(f.data)
		return job, rows, err
	}
	return job, src.Rows(ctr.TrainSplit, f.rows), nil
}

// shard is worker id of workers' part of rows: every generated row whose
// index modulo workers is id, or the whole data file, used as given.
func (f *trainFlags) shard(rows []ctr.Row, workers, id int) []ctr.Row {
	if f.data != "" {
		return rows
	}
	return ctr.Shard(rows, workers, id)
}

func readRows(path string) ([]ctr.Row, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	rows, err := ctr.ReadRows(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// newLogger prefixes a process's log lines with its role, e.g. "ps-0: ".
func newLogger(w io.Writer, role string, index int) *log.Logger {
	return log.New(w, fmt.Sprintf("%s-%d: ", role, index), log.LstdFlags|log.Lmsgprefix)
}

// parseFlags parses args, turning a bad flag into a usage error.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	return nil
}
