package ps

import (
	"errors"
	"fmt"
	"log"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// shard is one pserver's parameters and the step barrier guarding them.
// Requests from every trainer's connection call its methods concurrently;
// each blocks until its step comes.
type shard struct {
	index, shards, trainers int
	log                     *log.Logger

	mu   sync.Mutex
	cond *sync.Cond
	err  error // set once the job failed; wakes every waiter

	// Joining. The job starts once every trainer said hello.
	hellos  map[int]*hello
	started bool

	// Set when the job starts, from trainer 0's hello.
	plan         ctr.Plan
	layout       layout
	state        *shardState
	stepsPerPass int
	step         int // steps applied, counting from the job's first pass

	agg  aggregate // the current step's pushes
	pass passTotals

	finished map[int]bool
	allDone  chan struct{} // closed when every trainer finished
	failed   chan struct{} // closed when err is set
}

// aggregate sums the trainers' gradients for one step.
type aggregate struct {
	pushed   map[int]bool
	grad     shardState // Dense and Rows only
	touched  []int      // local rows with a gradient
	isTouch  []bool
	examples int
	lossSum  float64
}

// passTotals is what the pserver logs after each pass.
type passTotals struct {
	steps, examples int
	lossSum         float64
}

func newShard(index, shards, trainers int, logger *log.Logger) *shard {
	s := &shard{
		index: index, shards: shards, trainers: trainers, log: logger,
		hellos:   make(map[int]*hello),
		finished: make(map[int]bool),
		allDone:  make(chan struct{}),
		failed:   make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// fail stops the job: every waiting and later request fails with err.
func (s *shard) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(err)
}

// failure is the error that stopped the job, nil while it runs or after it
// finished.
func (s *shard) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *shard) failLocked(err error) {
	if s.err != nil {
		return
	}
	s.err = err
	close(s.failed)
	s.cond.Broadcast()
}

// waitLocked blocks until ready holds or the job failed.
func (s *shard) waitLocked(ready func() bool) error {
	for s.err == nil && !ready() {
		s.cond.Wait()
	}
	return s.err
}

// join records a trainer's hello and returns once every trainer has joined.
func (s *shard) join(h *hello) (*helloReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case h.Trainers != s.trainers:
		return nil, fmt.Errorf("trainer %d counts %d trainers, this pserver %d", h.TrainerID, h.Trainers, s.trainers)
	case h.TrainerID < 0 || h.TrainerID >= s.trainers:
		return nil, fmt.Errorf("trainer id %d out of range [0, %d)", h.TrainerID, s.trainers)
	case s.hellos[h.TrainerID] != nil:
		return nil, fmt.Errorf("trainer %d joined twice", h.TrainerID)
	}
	s.hellos[h.TrainerID] = h
	s.log.Printf("trainer %d joined (%d rows); %d of %d", h.TrainerID, h.Rows, len(s.hellos), s.trainers)
	if len(s.hellos) == s.trainers {
		if err := s.startLocked(); err != nil {
			s.failLocked(err)
		}
		s.cond.Broadcast()
	}
	if err := s.waitLocked(func() bool { return s.started }); err != nil {
		return nil, err
	}
	if h.Plan != s.plan {
		return nil, fmt.Errorf("trainer %d has plan %+v, trainer 0 %+v", h.TrainerID, h.Plan, s.plan)
	}
	return &helloReply{FirstPass: s.step / s.stepsPerPass, StepsPerPass: s.stepsPerPass}, nil
}

// startLocked sets the shard up from trainer 0's hello.
func (s *shard) startLocked() error {
	lead := s.hellos[0]
	if err := lead.Plan.Validate(); err != nil {
		return fmt.Errorf("trainer 0's plan: %w", err)
	}
	if lead.Init == nil {
		return errors.New("trainer 0 sent no initial state")
	}
	s.plan = lead.Plan
	s.layout = layout{model: lead.Plan.Model, shards: s.shards}
	if err := s.layout.check(s.index, lead.Init); err != nil {
		return fmt.Errorf("trainer 0's initial state: %w", err)
	}
	s.state = lead.Init
	maxRows := 0
	for _, h := range s.hellos {
		maxRows = max(maxRows, h.Rows)
	}
	if maxRows == 0 {
		return errors.New("no trainer has any rows to train on")
	}
	s.stepsPerPass = (maxRows + s.plan.BatchSize - 1) / s.plan.BatchSize
	s.step = lead.FirstPass * s.stepsPerPass
	s.agg = aggregate{
		pushed:  make(map[int]bool),
		grad:    shardState{Dense: make([]float64, len(s.state.Dense)), Rows: make([]float64, len(s.state.Rows))},
		isTouch: make([]bool, s.layout.localRows(s.index)),
	}
	s.started = true
	s.log.Printf("all %d trainers joined: %s, %d steps per pass",
		s.trainers, ctr.Remaining(lead.FirstPass, s.plan.Passes), s.stepsPerPass)
	return nil
}

// atStepLocked waits until step is the next to apply.
func (s *shard) atStepLocked(step int) error {
	if err := s.waitLocked(func() bool { return s.step >= step }); err != nil {
		return err
	}
	if s.step != step {
		return fmt.Errorf("step %d is over: the pserver is at step %d", step, s.step)
	}
	return nil
}

// ownRows checks buckets belong to this shard.
func (s *shard) ownRows(buckets []uint32) error {
	for _, b := range buckets {
		if int(b) >= s.plan.Model.Buckets || s.layout.owner(b) != s.index {
			return fmt.Errorf("bucket %d does not belong to pserver %d", b, s.index)
		}
	}
	return nil
}

// pull returns the parameters of a step once the step before it is applied.
func (s *shard) pull(p *pull) (*pullReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.atStepLocked(p.Step); err != nil {
		return nil, err
	}
	if err := s.ownRows(p.Buckets); err != nil {
		return nil, err
	}
	w := s.plan.Model.RowWidth()
	out := &pullReply{Dense: slices.Clone(s.state.Dense), Rows: make([]float64, 0, len(p.Buckets)*w)}
	for _, b := range p.Buckets {
		i := s.layout.local(b)
		out.Rows = append(out.Rows, s.state.Rows[i*w:(i+1)*w]...)
	}
	return out, nil
}

// push adds a trainer's gradient to its step, applying the step when it is
// the last one missing.
func (s *shard) push(p *push) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.atStepLocked(p.Step); err != nil {
		return err
	}
	a := &s.agg
	w := s.plan.Model.RowWidth()
	switch {
	case a.pushed[p.TrainerID]:
		return fmt.Errorf("trainer %d pushed step %d twice", p.TrainerID, p.Step)
	case len(p.Dense) != 0 && len(p.Dense) != len(a.grad.Dense):
		return fmt.Errorf("dense gradient has %d values, want %d", len(p.Dense), len(a.grad.Dense))
	case len(p.Rows) != len(p.Buckets)*w:
		return fmt.Errorf("%d sparse gradient values for %d buckets of width %d", len(p.Rows), len(p.Buckets), w)
	}
	if err := s.ownRows(p.Buckets); err != nil {
		return err
	}
	a.pushed[p.TrainerID] = true
	a.examples += p.Examples
	a.lossSum += p.LossSum
	for i, g := range p.Dense {
		a.grad.Dense[i] += g
	}
	for k, b := range p.Buckets {
		i := s.layout.local(b)
		if !a.isTouch[i] {
			a.isTouch[i] = true
			a.touched = append(a.touched, i)
		}
		dst := a.grad.Rows[i*w : (i+1)*w]
		for j, g := range p.Rows[k*w : (k+1)*w] {
			dst[j] += g
		}
	}
	if len(a.pushed) == s.trainers {
		s.applyLocked()
		s.cond.Broadcast()
	}
	return nil
}

// applyLocked takes one Adagrad step with the mean gradient of the step's
// rows and moves on to the next step.
func (s *shard) applyLocked() {
	a, st, lr := &s.agg, s.state, s.plan.LR
	if a.examples > 0 {
		scale := 1 / float64(a.examples)
		ctr.AdagradStep(lr, st.Dense, st.DenseAccum, a.grad.Dense, scale)
		w := s.plan.Model.RowWidth()
		for _, i := range a.touched {
			r := i * w
			ctr.AdagradStep(lr, st.Rows[r:r+w], st.RowsAccum[r:r+w], a.grad.Rows[r:r+w], scale)
		}
	}
	s.pass.steps++
	s.pass.examples += a.examples
	s.pass.lossSum += a.lossSum

	clear(a.pushed)
	clear(a.grad.Dense)
	w := s.plan.Model.RowWidth()
	for _, i := range a.touched {
		clear(a.grad.Rows[i*w : (i+1)*w])
		a.isTouch[i] = false
	}
	a.touched = a.touched[:0]
	a.examples, a.lossSum = 0, 0

	s.step++
	if s.step%s.stepsPerPass == 0 {
		t := s.pass
		s.log.Printf("pass %d/%d: steps=%d examples=%d loss=%.4f",
			s.step/s.stepsPerPass, s.plan.Passes, t.steps, t.examples, t.lossSum/float64(max(t.examples, 1)))
		s.pass = passTotals{}
	}
}

// dump returns a copy of the whole shard once step steps are applied.
func (s *shard) dump(d *dump) (*shardState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.waitLocked(func() bool { return s.started && s.step >= d.Step }); err != nil {
		return nil, err
	}
	if s.step != d.Step {
		return nil, fmt.Errorf("dump of step %d asked at step %d", d.Step, s.step)
	}
	st := s.state
	return &shardState{
		Dense: slices.Clone(st.Dense), DenseAccum: slices.Clone(st.DenseAccum),
		Rows: slices.Clone(st.Rows), RowsAccum: slices.Clone(st.RowsAccum),
	}, nil
}

// finish records that a trainer is done.
func (s *shard) finish(id int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hellos[id] == nil {
		return fmt.Errorf("trainer %d finished without joining", id)
	}
	if s.finished[id] {
		return nil
	}
	s.finished[id] = true
	s.log.Printf("trainer %d done; %d of %d", id, len(s.finished), s.trainers)
	if len(s.finished) == s.trainers {
		close(s.allDone)
	}
	return nil
}

// lost reports a trainer's connection ending. Before the trainer is done
// that dooms the job: the barrier would wait for it forever.
func (s *shard) lost(id int, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.finished[id] {
		s.failLocked(fmt.Errorf("trainer %d disconnected before finishing: %w", id, cause))
	}
}

// missing names the trainers that have not joined yet, or "" once all have.
func (s *shard) missing() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.trainers {
		if s.hellos[id] == nil {
			ids = append(ids, strconv.Itoa(id))
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return "trainer " + strings.Join(ids, ", ")
}
