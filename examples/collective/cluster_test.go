package collective

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/examples/collective/membershiptest"
	"github.com/paddlejob/paddlejob/examples/ctr"
	"github.com/paddlejob/paddlejob/examples/internal/testlog"
)

// elasticData is the data set of the elastic tests: small, with a row count
// every world size of the tests divides.
var elasticData = sync.OnceValue(func() *dataset { return newDataset(12000, 4000) })

// elasticPlan trains a smaller model than the default, quick enough for
// several jobs per test even under the race detector.
func elasticPlan() ctr.Plan {
	plan := ctr.DefaultPlan()
	plan.Model = ctr.Config{Buckets: 512, EmbedDim: 4, Hidden: 8}
	plan.BatchSize = 128
	plan.Passes = 4
	return plan
}

// cluster runs elastic workers in goroutines over loopback TCP, sharing an
// output directory and a membership directory the test publishes to.
type cluster struct {
	t          *testing.T
	ctx        context.Context
	plan       ctr.Plan
	membership MembershipDir
	out        string
	passDelay  time.Duration
	timeout    time.Duration // of a rendezvous
	logs       testlog.Buffer
	version    int
	workers    []*elasticWorker
}

// elasticWorker is one worker's goroutine.
type elasticWorker struct {
	name, endpoint string
	stop           context.CancelFunc
	done           chan struct{}
	result         *ctr.Result
	err            error
}

func newCluster(t *testing.T, passDelay time.Duration) *cluster {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c := &cluster{
		t: t, ctx: ctx, plan: elasticPlan(), passDelay: passDelay, timeout: time.Minute,
		membership: MembershipDir(filepath.Join(t.TempDir(), "paddlejob")), out: t.TempDir(),
	}
	t.Cleanup(func() {
		cancel()
		for _, w := range c.workers {
			<-w.done
		}
		if t.Failed() {
			t.Logf("logs:\n%s", c.logs.String())
		}
	})
	return c
}

// publish replaces the membership, as the operator does when workers come
// and go.
func (c *cluster) publish(endpoints ...string) {
	c.t.Helper()
	c.version++
	if err := membershiptest.Publish(string(c.membership), strconv.Itoa(c.version), endpoints); err != nil {
		c.t.Fatal(err)
	}
}

// start runs a fresh worker process, as a (re)created pod would.
func (c *cluster) start(name, endpoint string) *elasticWorker {
	return c.startWith(name, endpoint, c.membership)
}

// startWith runs a worker that reads its membership from its own directory.
func (c *cluster) startWith(name, endpoint string, membership MembershipDir) *elasticWorker {
	data := elasticData()
	ctx, stop := context.WithCancel(c.ctx)
	w := &elasticWorker{name: name, endpoint: endpoint, stop: stop, done: make(chan struct{})}
	c.workers = append(c.workers, w)
	go func() {
		defer close(w.done)
		w.result, w.err = TrainElastic(ctx, ElasticConfig{
			Self: endpoint, Membership: membership,
			Job:               &ctr.Job{Plan: c.plan, Test: data.test, OptimalAUC: data.optimal, OutputDir: c.out},
			Shard:             func(workers, rank int) []ctr.Row { return ctr.Shard(data.train, workers, rank) },
			ConnectTimeout:    10 * time.Second,
			RendezvousTimeout: c.timeout,
			PassDelay:         c.passDelay,
			Log:               c.logs.Logger(name),
		})
	}()
	return w
}

// kill makes a worker vanish: its listener and connections close at once.
func (w *elasticWorker) kill() {
	w.stop()
	<-w.done
}

// waitFor polls cond until it holds.
func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	for !cond() {
		select {
		case <-c.ctx.Done():
			c.t.Fatalf("gave up waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// checkpointed reports whether the checkpoint of pass is complete.
func (c *cluster) checkpointed(pass int) func() bool {
	return func() bool {
		_, err := os.Stat(filepath.Join(ctr.PassDir(c.out, pass), "done"))
		return err == nil
	}
}

// finish waits for every worker and returns the job's result: exactly one
// worker, rank 0 of the last epoch, reports it. Workers in killed have
// been killed and may report anything.
func (c *cluster) finish(killed ...*elasticWorker) *ctr.Result {
	c.t.Helper()
	var result *ctr.Result
	for _, w := range c.workers {
		<-w.done
		if containsWorker(killed, w) {
			continue
		}
		if w.err != nil {
			c.t.Errorf("%s: %v", w.name, w.err)
		}
		if w.result != nil {
			if result != nil {
				c.t.Errorf("%s reported a second result", w.name)
			}
			result = w.result
		}
	}
	if result == nil {
		c.t.Fatal("no worker reported the job's result")
	}
	if want := ctr.PassDir(c.out, c.plan.Passes-1); result.Passes != c.plan.Passes || result.ModelDir != want {
		c.t.Errorf("result %s, want %d passes and model %s", result, c.plan.Passes, want)
	}
	c.checkEpochStarts()
	return result
}

func containsWorker(ws []*elasticWorker, w *elasticWorker) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// epochStart is a worker's log line at the start of an epoch.
var epochStart = regexp.MustCompile(`(?m)(\S+): epoch (\d+): rank (\d+) of (\d+), (.*), state ([0-9a-f]{16})$`)

type epochLine struct {
	worker            string
	epoch, rank, size int
	passes, state     string
}

func (c *cluster) epochLines() []epochLine {
	var out []epochLine
	for _, m := range epochStart.FindAllStringSubmatch(c.logs.String(), -1) {
		epoch, _ := strconv.Atoi(m[2])
		rank, _ := strconv.Atoi(m[3])
		size, _ := strconv.Atoi(m[4])
		out = append(out, epochLine{m[1], epoch, rank, size, m[5], m[6]})
	}
	return out
}

// checkEpochStarts checks that the members of every epoch started it from
// the same state and the same pass, each with its own rank.
func (c *cluster) checkEpochStarts() {
	c.t.Helper()
	first := map[int]epochLine{}
	ranks := map[int]map[int]bool{}
	for _, l := range c.epochLines() {
		f, ok := first[l.epoch]
		if !ok {
			first[l.epoch], ranks[l.epoch] = l, map[int]bool{}
			f = l
		}
		if l.state != f.state || l.passes != f.passes || l.size != f.size {
			c.t.Errorf("epoch %d: %s starts %s from state %s of %d workers, %s %s from %s of %d",
				l.epoch, l.worker, l.passes, l.state, l.size, f.worker, f.passes, f.state, f.size)
		}
		if ranks[l.epoch][l.rank] {
			c.t.Errorf("epoch %d: two workers have rank %d", l.epoch, l.rank)
		}
		ranks[l.epoch][l.rank] = true
	}
}

// lastEpochSize is the number of workers of the last epoch that started.
func (c *cluster) lastEpochSize() int {
	lines := c.epochLines()
	if len(lines) == 0 {
		return 0
	}
	return lines[len(lines)-1].size
}

// undisturbedRun is the outcome of a run nothing disturbed.
type undisturbedRun struct {
	testAUC float64
	final   uint64 // fingerprint of the last checkpoint's state
}

// baselines caches undisturbed runs by worker count and passes.
var baselines sync.Map

// undisturbed runs workers workers on the data of the elastic tests for
// passes passes, undisturbed.
func undisturbed(t *testing.T, workers, passes int) undisturbedRun {
	t.Helper()
	key := [2]int{workers, passes}
	if run, ok := baselines.Load(key); ok {
		return run.(undisturbedRun)
	}
	c := newCluster(t, 0)
	c.plan.Passes = passes
	endpoints := freeEndpoints(t, 160, workers)
	c.publish(endpoints...)
	for i, ep := range endpoints {
		c.start(fmt.Sprintf("worker-%d", i), ep)
	}
	run := undisturbedRun{testAUC: c.finish().TestAUC, final: c.finalFingerprint()}
	baselines.Store(key, run)
	t.Logf("undisturbed run of %d workers, %d passes: test AUC %.4f", workers, passes, run.testAUC)
	return run
}

// finalFingerprint is the fingerprint of the state the job ended with.
func (c *cluster) finalFingerprint() uint64 {
	c.t.Helper()
	ck, err := ctr.LoadCheckpoint(ctr.PassDir(c.out, c.plan.Passes-1))
	if err != nil {
		c.t.Fatal(err)
	}
	return ck.State.Fingerprint()
}

// checkAUC compares got with the undisturbed run of workers workers.
func checkAUC(t *testing.T, got *ctr.Result, workers int) {
	t.Helper()
	want := undisturbed(t, workers, got.Passes).testAUC
	t.Logf("%s (undisturbed %.4f)", got, want)
	if math.Abs(got.TestAUC-want) > 0.01 {
		t.Errorf("test AUC %.4f, undisturbed run of %d workers %.4f: more than 0.01 apart", got.TestAUC, workers, want)
	}
}

// firstPass is the 0-based first pass of an epoch line's "passes a..b".
func (l epochLine) firstPass() int {
	var a, b int
	fmt.Sscanf(l.passes, "passes %d..%d", &a, &b)
	return a - 1
}
