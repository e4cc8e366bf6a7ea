package collective

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
	"github.com/paddlejob/paddlejob/examples/internal/testlog"
)

// dataset is a generated data set split among workers.
type dataset struct {
	train, test []ctr.Row
	optimal     float64
}

func newDataset(rows, testRows int) *dataset {
	src := ctr.NewSource(1)
	d := &dataset{train: src.Rows(ctr.TrainSplit, rows), test: src.Rows(ctr.TestSplit, testRows)}
	d.optimal = src.OptimalAUC(d.test)
	return d
}

func (d *dataset) job(plan ctr.Plan, workers, rank int, dir string, resume bool) *ctr.Job {
	return &ctr.Job{Plan: plan, Train: ctr.Shard(d.train, workers, rank), Test: d.test, OptimalAUC: d.optimal, OutputDir: dir, Resume: resume}
}

// train runs one worker per job over loopback TCP and returns rank 0's
// result and every worker's error.
func train(t *testing.T, l *testlog.Buffer, firstHost int, jobs []*ctr.Job) (*ctr.Result, []error) {
	t.Helper()
	var endpoints []string
	if len(jobs) > 1 {
		endpoints = freeEndpoints(t, firstHost, len(jobs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make([]error, len(jobs))
	results := make([]*ctr.Result, len(jobs))
	var wg sync.WaitGroup
	for rank, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[rank], errs[rank] = Train(ctx, Config{
				Endpoints: endpoints, Rank: rank, Job: job,
				ConnectTimeout: 30 * time.Second, Log: l.Logger(fmt.Sprintf("worker-%d", rank)),
			})
		}()
	}
	wg.Wait()
	for rank, res := range results[1:] {
		if res != nil {
			t.Errorf("rank %d returned a result", rank+1)
		}
	}
	return results[0], errs
}

func mustTrain(t *testing.T, l *testlog.Buffer, firstHost int, jobs []*ctr.Job) *ctr.Result {
	t.Helper()
	res, errs := train(t, l, firstHost, jobs)
	for rank, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", rank, err)
		}
	}
	if res == nil {
		t.Error("rank 0 returned no result")
	}
	if t.Failed() {
		t.Fatalf("logs:\n%s", l)
	}
	return res
}

func TestThreeWorkersReachTheOptimum(t *testing.T) {
	data := newDataset(80000, 10000)
	plan := ctr.DefaultPlan()
	plan.Passes = 4
	dir := t.TempDir()
	var l testlog.Buffer
	res := mustTrain(t, &l, 100, []*ctr.Job{
		data.job(plan, 3, 0, dir, false), data.job(plan, 3, 1, dir, false), data.job(plan, 3, 2, dir, false),
	})
	t.Logf("%s", res)
	if res.TestAUC < res.OptimalAUC-0.02 {
		t.Errorf("test AUC %.4f is more than 0.02 below the optimum %.4f", res.TestAUC, res.OptimalAUC)
	}
	if want := filepath.Join(dir, "pass-00003"); res.ModelDir != want {
		t.Errorf("model %s, want %s", res.ModelDir, want)
	}
	for pass := range 4 {
		if _, err := ctr.LoadCheckpoint(ctr.PassDir(dir, pass)); err != nil {
			t.Error(err)
		}
	}
	for _, want := range []string{"worker-0: pass 4/4: loss=", "test_auc=", "worker-2: pass 4/4: loss="} {
		if !strings.Contains(l.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, l.String())
		}
	}
}

func TestResumeContinuesExactly(t *testing.T) {
	// The ring sums in a fixed order, so resuming from a checkpoint gives
	// bit for bit the model of an uninterrupted run.
	data := newDataset(6000, 2000)
	plan := ctr.DefaultPlan()
	jobs := func(passes int, dir string) []*ctr.Job {
		plan.Passes = passes
		return []*ctr.Job{data.job(plan, 2, 0, dir, true), data.job(plan, 2, 1, dir, true)}
	}
	straight, resumed := t.TempDir(), t.TempDir()
	var l testlog.Buffer
	want := mustTrain(t, &l, 120, jobs(4, straight))
	mustTrain(t, &l, 130, jobs(2, resumed))
	got := mustTrain(t, &l, 140, jobs(4, resumed))

	if got.TestAUC != want.TestAUC {
		t.Errorf("resumed run's test AUC %v, uninterrupted %v", got.TestAUC, want.TestAUC)
	}
	a, errA := ctr.LoadCheckpoint(ctr.PassDir(straight, 3))
	b, errB := ctr.LoadCheckpoint(ctr.PassDir(resumed, 3))
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !reflect.DeepEqual(a.State, b.State) {
		t.Error("resumed run's parameters differ from the uninterrupted run's")
	}
	if !strings.Contains(l.String(), "worker-1: ring of 2 ready: passes 3..4") {
		t.Errorf("worker 1 did not learn it resumes at pass 3:\n%s", l.String())
	}
}

func TestSingleWorkerNeedsNoNetwork(t *testing.T) {
	data := newDataset(3000, 1000)
	plan := ctr.DefaultPlan()
	plan.Passes = 1
	var l testlog.Buffer
	res := mustTrain(t, &l, 0, []*ctr.Job{data.job(plan, 1, 0, t.TempDir(), false)})
	if res.Passes != 1 || res.TestAUC < 0.6 {
		t.Errorf("result %s", res)
	}
	if strings.Contains(l.String(), "listening") {
		t.Errorf("a single worker listened:\n%s", l.String())
	}
}

func TestWorkersMustShareThePlan(t *testing.T) {
	data := newDataset(1000, 500)
	plan := ctr.DefaultPlan()
	other := plan
	other.LR /= 2
	var l testlog.Buffer
	_, errs := train(t, &l, 150, []*ctr.Job{data.job(plan, 2, 0, t.TempDir(), false), data.job(other, 2, 1, t.TempDir(), false)})
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "rank 1's plan") {
		t.Errorf("rank 1: %v", errs[1])
	}
	if errs[0] == nil {
		t.Error("rank 0 trained on after rank 1 left")
	}
}
