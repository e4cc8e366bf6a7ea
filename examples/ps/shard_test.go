package ps

import (
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// startedShard is pserver 0 of 1 for two trainers, past their hellos.
func startedShard(t *testing.T) (*shard, ctr.Plan) {
	t.Helper()
	plan := ctr.DefaultPlan()
	plan.Model = ctr.Config{Buckets: 8, EmbedDim: 2, Hidden: 2}
	s := newShard(0, 1, 2, log.New(io.Discard, "", 0))
	init := layout{model: plan.Model, shards: 1}.split(ctr.NewState(plan.Model, 1), 0)
	joined := make(chan error, 2)
	for id := range 2 {
		go func() {
			h := &hello{TrainerID: id, Trainers: 2, Rows: 10, Plan: plan}
			if id == 0 {
				h.Init = init
			}
			_, err := s.join(h)
			joined <- err
		}()
	}
	for range 2 {
		if err := <-joined; err != nil {
			t.Fatal(err)
		}
	}
	return s, plan
}

func TestStepWaitsForEveryTrainer(t *testing.T) {
	s, plan := startedShard(t)
	before, err := s.pull(&pull{Step: 0, Buckets: []uint32{3}})
	if err != nil {
		t.Fatal(err)
	}
	gradient := func(id int) *push {
		return &push{
			Step: 0, TrainerID: id, Examples: 1, LossSum: 0.5,
			Dense: make([]float64, plan.Model.DenseSize()), Buckets: []uint32{3}, Rows: []float64{1, 0, 0},
		}
	}
	if err := s.push(gradient(0)); err != nil {
		t.Fatal(err)
	}
	if err := s.push(gradient(0)); err == nil || !strings.Contains(err.Error(), "pushed step 0 twice") {
		t.Fatalf("second push of trainer 0: %v", err)
	}

	pulled := make(chan *pullReply, 1)
	go func() {
		r, err := s.pull(&pull{Step: 1, Buckets: []uint32{3}})
		if err != nil {
			t.Error(err)
		}
		pulled <- r
	}()
	select {
	case <-pulled:
		t.Fatal("step 1 was served before trainer 1 pushed step 0")
	case <-time.After(100 * time.Millisecond):
	}
	if err := s.push(gradient(1)); err != nil {
		t.Fatal(err)
	}
	after := <-pulled
	// Adagrad's first step moves a weight by about the learning rate.
	if moved := before.Rows[0] - after.Rows[0]; moved < 0.9*plan.LR || moved > 1.1*plan.LR {
		t.Fatalf("bucket 3's wide weight moved by %v, want about %v", moved, plan.LR)
	}
	if _, err := s.pull(&pull{Step: 0}); err == nil || !strings.Contains(err.Error(), "step 0 is over") {
		t.Fatalf("pull of a finished step: %v", err)
	}
	if _, err := s.pull(&pull{Step: 1, Buckets: []uint32{99}}); err == nil {
		t.Fatal("pulled a bucket the model does not have")
	}
}
