package ps

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
	"github.com/paddlejob/paddlejob/examples/internal/testlog"
)

// freeEndpoints returns n loopback endpoints nothing listens on yet.
func freeEndpoints(t *testing.T, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out[i] = ln.Addr().String()
		ln.Close()
	}
	return out
}

// dataset is a generated data set split among trainers.
type dataset struct {
	src         *ctr.Source
	train, test []ctr.Row
	optimal     float64
}

func newDataset(rows, testRows int) *dataset {
	src := ctr.NewSource(1)
	d := &dataset{src: src, train: src.Rows(ctr.TrainSplit, rows), test: src.Rows(ctr.TestSplit, testRows)}
	d.optimal = src.OptimalAUC(d.test)
	return d
}

func (d *dataset) job(plan ctr.Plan, trainers, id int, dir string, resume bool) *ctr.Job {
	return &ctr.Job{Plan: plan, Train: ctr.Shard(d.train, trainers, id), Test: d.test, OptimalAUC: d.optimal, OutputDir: dir, Resume: resume}
}

// outcome is what a whole job's processes returned.
type outcome struct {
	result        *ctr.Result
	serverErrs    []error
	trainerErrs   []error
	otherResults  int // results returned by trainers other than 0
	serverExitsAt []time.Time
	trainersEnd   time.Time
}

// runJob runs pservers and trainers as goroutines over loopback TCP.
func runJob(t *testing.T, l *testlog.Buffer, pservers int, jobs []*ctr.Job) outcome {
	t.Helper()
	endpoints := freeEndpoints(t, pservers)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := outcome{
		serverErrs:    make([]error, pservers),
		trainerErrs:   make([]error, len(jobs)),
		serverExitsAt: make([]time.Time, pservers),
	}
	var servers, trainers sync.WaitGroup
	for i := range pservers {
		servers.Add(1)
		go func() {
			defer servers.Done()
			out.serverErrs[i] = Serve(ctx, ServerConfig{
				Endpoints: endpoints, Index: i, Trainers: len(jobs),
				JoinTimeout: time.Minute, Log: l.Logger(fmt.Sprintf("ps-%d", i)),
			})
			out.serverExitsAt[i] = time.Now()
		}()
	}
	var mu sync.Mutex
	for id, job := range jobs {
		trainers.Add(1)
		go func() {
			defer trainers.Done()
			res, err := Train(ctx, TrainerConfig{
				PServers: endpoints, TrainerID: id, Trainers: len(jobs), Job: job,
				ConnectTimeout: time.Minute, Log: l.Logger(fmt.Sprintf("trainer-%d", id)),
			})
			mu.Lock()
			defer mu.Unlock()
			out.trainerErrs[id] = err
			if id == 0 {
				out.result = res
			} else if res != nil {
				out.otherResults++
			}
		}()
	}
	trainers.Wait()
	out.trainersEnd = time.Now()
	servers.Wait()
	return out
}

func (o outcome) check(t *testing.T, l *testlog.Buffer) {
	t.Helper()
	for i, err := range o.serverErrs {
		if err != nil {
			t.Errorf("pserver %d: %v", i, err)
		}
	}
	for i, err := range o.trainerErrs {
		if err != nil {
			t.Errorf("trainer %d: %v", i, err)
		}
	}
	if o.otherResults > 0 {
		t.Errorf("%d trainers other than 0 returned a result", o.otherResults)
	}
	if o.result == nil {
		t.Error("trainer 0 returned no result")
	}
	if t.Failed() {
		t.Fatalf("logs:\n%s", l)
	}
}

// checkpoints lists the complete pass-NNNNN directories of dir.
func checkpoints(t *testing.T, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "pass-*", "done"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range matches {
		out = append(out, filepath.Base(filepath.Dir(m)))
	}
	return out
}

func TestTwoPServersTwoTrainersReachTheOptimum(t *testing.T) {
	data := newDataset(80000, 10000)
	plan := ctr.DefaultPlan()
	plan.Passes = 4
	dir := t.TempDir()
	var l testlog.Buffer
	out := runJob(t, &l, 2, []*ctr.Job{data.job(plan, 2, 0, dir, false), data.job(plan, 2, 1, dir, false)})
	out.check(t, &l)

	res := out.result
	t.Logf("%s", res)
	if res.TestAUC < res.OptimalAUC-0.02 {
		t.Errorf("test AUC %.4f is more than 0.02 below the optimum %.4f", res.TestAUC, res.OptimalAUC)
	}
	if want := filepath.Join(dir, "pass-00003"); res.ModelDir != want || res.Passes != 4 {
		t.Errorf("result model %s after %d passes, want %s after 4", res.ModelDir, res.Passes, want)
	}
	if got := strings.Join(checkpoints(t, dir), " "); got != "pass-00000 pass-00001 pass-00002 pass-00003" {
		t.Errorf("checkpoints %s", got)
	}
	for i, at := range out.serverExitsAt {
		if at.Sub(out.trainersEnd) > 5*time.Second {
			t.Errorf("pserver %d exited %s after the trainers finished", i, at.Sub(out.trainersEnd))
		}
	}
	for _, want := range []string{"ps-0: pass 4/4: steps=", "ps-1: all 2 trainers done; exiting", "trainer-1: pass 4/4: loss=", "trainer-0: pass 4/4: loss="} {
		if !strings.Contains(l.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, l.String())
		}
	}
}

func TestResume(t *testing.T) {
	data := newDataset(20000, 5000)
	plan := ctr.DefaultPlan()
	dir := t.TempDir()
	run := func(passes int) (outcome, *testlog.Buffer) {
		plan.Passes = passes
		var l testlog.Buffer
		out := runJob(t, &l, 2, []*ctr.Job{data.job(plan, 2, 0, dir, true), data.job(plan, 2, 1, dir, true)})
		out.check(t, &l)
		return out, &l
	}

	first, _ := run(2)
	if got := len(checkpoints(t, dir)); got != 2 {
		t.Fatalf("%d checkpoints after 2 passes", got)
	}
	second, l := run(4)
	if got := strings.Join(checkpoints(t, dir), " "); got != "pass-00000 pass-00001 pass-00002 pass-00003" {
		t.Fatalf("checkpoints after resuming to 4 passes: %s", got)
	}
	for _, want := range []string{"resuming from " + filepath.Join(dir, "pass-00001"), "trainer-1: joined 2 pservers: passes 3..4", "trainer-0: pass 3/4"} {
		if !strings.Contains(l.String(), want) {
			t.Errorf("logs of the resumed run lack %q:\n%s", want, l)
		}
	}
	if strings.Contains(l.String(), "pass 1/4") {
		t.Errorf("the resumed run trained pass 1 again:\n%s", l)
	}
	if second.result.TestAUC < first.result.TestAUC-0.005 {
		t.Errorf("test AUC fell from %.4f after 2 passes to %.4f after 4", first.result.TestAUC, second.result.TestAUC)
	}

	// Nothing is left to train: the job reports the last checkpoint.
	third, _ := run(4)
	if third.result.ModelDir != second.result.ModelDir || third.result.TestAUC != second.result.TestAUC {
		t.Errorf("rerun of a finished job: %s, want %s", third.result, second.result)
	}
}

func TestUnevenShardsStayInStep(t *testing.T) {
	// Trainer 1 runs out of rows after 2 steps and pushes empty gradients
	// for the others.
	data := newDataset(1300, 500)
	plan := ctr.DefaultPlan()
	plan.Passes = 2
	dir := t.TempDir()
	jobs := []*ctr.Job{data.job(plan, 1, 0, dir, false), data.job(plan, 1, 0, dir, false)}
	jobs[0].Train, jobs[1].Train = data.train[:1000], data.train[1000:]
	var l testlog.Buffer
	runJob(t, &l, 3, jobs).check(t, &l)
	if want := "ps-2: pass 2/2: steps=4 examples=1300"; !strings.Contains(l.String(), want) {
		t.Errorf("logs lack %q:\n%s", want, l.String())
	}
}

func TestPServerFailsWhenATrainerVanishes(t *testing.T) {
	data := newDataset(2000, 500)
	plan := ctr.DefaultPlan()
	endpoints := freeEndpoints(t, 1)
	var l testlog.Buffer
	ctx := context.Background()
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ServerConfig{Endpoints: endpoints, Trainers: 2, JoinTimeout: time.Minute, Log: l.Logger("ps-0")})
	}()
	trained := make(chan error, 1)
	go func() {
		_, err := Train(ctx, TrainerConfig{
			PServers: endpoints, TrainerID: 0, Trainers: 2, Job: data.job(plan, 2, 0, t.TempDir(), false),
			ConnectTimeout: time.Minute, Log: l.Logger("trainer-0"),
		})
		trained <- err
	}()

	// Trainer 1 joins, then hangs up.
	conn, err := net.DialTimeout("tcp", endpoints[0], time.Minute)
	for i := 0; err != nil && i < 100; i++ {
		time.Sleep(50 * time.Millisecond)
		conn, err = net.Dial("tcp", endpoints[0])
	}
	if err != nil {
		t.Fatal(err)
	}
	w := newWire(conn)
	if err := w.send(&request{Hello: &hello{TrainerID: 1, Trainers: 2, Rows: 1000, Plan: plan}}); err != nil {
		t.Fatal(err)
	}
	var rep reply
	if err := w.receive(&rep); err != nil || rep.Err != "" {
		t.Fatalf("hello: %v %s", err, rep.Err)
	}
	conn.Close()

	if err := <-served; err == nil || !strings.Contains(err.Error(), "trainer 1 disconnected before finishing") {
		t.Errorf("pserver: %v", err)
	}
	if err := <-trained; err == nil || !strings.Contains(err.Error(), "pserver 0 at "+endpoints[0]) {
		t.Errorf("trainer 0: %v", err)
	}
}

func TestPServerGivesUpOnTrainersThatNeverJoin(t *testing.T) {
	var l testlog.Buffer
	err := Serve(context.Background(), ServerConfig{
		Endpoints: freeEndpoints(t, 1), Trainers: 2, JoinTimeout: 300 * time.Millisecond, Log: l.Logger("ps-0"),
	})
	if err == nil || !strings.Contains(err.Error(), "trainer 0, 1 did not join within 300ms") {
		t.Fatalf("error = %v", err)
	}
}

func TestTrainerGivesUpOnAMissingPServer(t *testing.T) {
	endpoints := freeEndpoints(t, 1)
	var l testlog.Buffer
	_, err := Train(context.Background(), TrainerConfig{
		PServers: endpoints, TrainerID: 0, Trainers: 1,
		Job:            newDataset(100, 100).job(ctr.DefaultPlan(), 1, 0, t.TempDir(), false),
		ConnectTimeout: 300 * time.Millisecond, Log: l.Logger("trainer-0"),
	})
	if err == nil || !strings.Contains(err.Error(), "pserver 0 at "+endpoints[0]+" unreachable") {
		t.Fatalf("error = %v", err)
	}
}
