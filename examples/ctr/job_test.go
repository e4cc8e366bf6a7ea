package ctr

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestPlanValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Plan)
		wantErr string
	}{
		{"default", func(*Plan) {}, ""},
		{"no buckets", func(p *Plan) { p.Model.Buckets = 0 }, "buckets must be positive"},
		{"zero learning rate", func(p *Plan) { p.LR = 0 }, "learning rate"},
		{"NaN learning rate", func(p *Plan) { p.LR = math.NaN() }, "learning rate"},
		{"no batch", func(p *Plan) { p.BatchSize = 0 }, "batch size"},
		{"no passes", func(p *Plan) { p.Passes = 0 }, "passes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultPlan()
			tt.edit(&p)
			err := p.Validate()
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestStartState(t *testing.T) {
	plan := DefaultPlan()
	plan.Model = smallConfig
	dir := t.TempDir()
	saved := randomState(smallConfig)
	if _, err := SaveCheckpoint(dir, &Checkpoint{Pass: 1, State: saved}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		resume    bool
		model     Config
		wantPass  int
		wantSaved bool
		wantErr   string
	}{
		{"fresh ignores checkpoints", false, smallConfig, 0, false, ""},
		{"resume", true, smallConfig, 2, true, ""},
		{"resume another model", true, Config{Buckets: 8, EmbedDim: 3, Hidden: 4}, 0, false, "has model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &Job{Plan: plan, OutputDir: dir, Resume: tt.resume}
			job.Plan.Model = tt.model
			st, first, from, err := job.StartState()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if first != tt.wantPass || reflect.DeepEqual(st, saved) != tt.wantSaved || (from != "") != tt.wantSaved {
				t.Fatalf("first pass %d (want %d), from %q, state is the saved one: %v", first, tt.wantPass, from, reflect.DeepEqual(st, saved))
			}
		})
	}
}

func TestSummaryLines(t *testing.T) {
	r := Result{TestAUC: 0.78123, OptimalAUC: 0.795, Passes: 5, ModelDir: "/out/pass-00004"}
	if got, want := r.String(), "final: test_auc=0.7812 optimal_auc=0.7950 passes=5 model=/out/pass-00004"; got != want {
		t.Errorf("Result = %q, want %q", got, want)
	}
	s := PassStats{Pass: 1, Passes: 5, Loss: 0.48212, TrainAUC: 0.77021, TestAUC: math.NaN()}
	if got, want := s.String(), "pass 2/5: loss=0.4821 train_auc=0.7702"; got != want {
		t.Errorf("PassStats = %q, want %q", got, want)
	}
	s.TestAUC = 0.7765
	if got, want := s.String(), "pass 2/5: loss=0.4821 train_auc=0.7702 test_auc=0.7765"; got != want {
		t.Errorf("PassStats = %q, want %q", got, want)
	}
}

func TestResumeStateIgnoresLaterPasses(t *testing.T) {
	plan := DefaultPlan()
	plan.Model = smallConfig
	dir := t.TempDir()
	saved, stale := randomState(smallConfig), randomState(smallConfig)
	stale.Params[0]++
	for pass, st := range map[int]*State{0: saved, 3: stale} {
		if _, err := SaveCheckpoint(dir, &Checkpoint{Pass: pass, State: st}); err != nil {
			t.Fatal(err)
		}
	}
	job := &Job{Plan: plan, OutputDir: dir}
	tests := []struct {
		before    int
		wantPass  int
		wantState *State
		wantFrom  string
	}{
		{0, 0, NewState(smallConfig, plan.Seed), ""},
		{2, 1, saved, PassDir(dir, 0)},
		{4, 4, stale, PassDir(dir, 3)},
	}
	for _, tt := range tests {
		st, first, from, err := job.ResumeState(tt.before)
		if err != nil || first != tt.wantPass || from != tt.wantFrom || !reflect.DeepEqual(st, tt.wantState) {
			t.Errorf("ResumeState(%d) = pass %d from %q (%v); want pass %d from %q", tt.before, first, from, err, tt.wantPass, tt.wantFrom)
		}
	}
}
