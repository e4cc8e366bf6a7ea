package ctr

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// smallConfig has few buckets, so rows' fields collide in a bucket and the
// gradient check covers shared rows.
var smallConfig = Config{Buckets: 16, EmbedDim: 3, Hidden: 4}

// randomState perturbs every parameter, wide weights included, so the
// gradient check is not at a special point.
func randomState(cfg Config) *State {
	st := NewState(cfg, 9)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range st.Params {
		st.Params[i] += 0.3 * rng.NormFloat64()
	}
	return st
}

func lossSum(m *Model, p Params, rows []Row) float64 {
	var sum float64
	for i := range rows {
		sum += logLoss(m.Predict(p, &rows[i]), rows[i].Clicked)
	}
	return sum
}

func TestGradientMatchesFiniteDifferences(t *testing.T) {
	cfg := smallConfig
	st := randomState(cfg)
	rows := NewSource(3).Rows(TrainSplit, 6)
	m := NewModel(cfg)

	grad := make([]float64, cfg.Size())
	var meter Meter
	analyticLoss := m.AccumulateBatch(cfg.View(st.Params), rows, cfg.View(grad), &meter)
	if want := lossSum(m, cfg.View(st.Params), rows); math.Abs(analyticLoss-want) > 1e-9 {
		t.Fatalf("AccumulateBatch loss %v, Predict's %v", analyticLoss, want)
	}

	const h = 1e-6
	for i := range st.Params {
		orig := st.Params[i]
		st.Params[i] = orig + h
		up := lossSum(m, cfg.View(st.Params), rows)
		st.Params[i] = orig - h
		down := lossSum(m, cfg.View(st.Params), rows)
		st.Params[i] = orig
		numeric := (up - down) / (2 * h)
		if diff := math.Abs(numeric - grad[i]); diff > 1e-6*math.Max(1, math.Abs(numeric)) {
			t.Errorf("parameter %d: analytic gradient %.8f, numeric %.8f", i, grad[i], numeric)
		}
	}
}

func TestRowMapAndTableAgree(t *testing.T) {
	// A PS trainer sees only its batch's rows; it must compute exactly what a
	// worker holding the whole table computes.
	cfg := smallConfig
	st := randomState(cfg)
	rows := NewSource(4).Rows(TrainSplit, 8)
	full := cfg.View(st.Params)

	paramRows, gradRows := RowMap{}, RowMap{}
	params := Params{Dense: full.Dense, Rows: paramRows}
	for i := range rows {
		for _, b := range cfg.RowBuckets(&rows[i]) {
			paramRows[b] = full.Rows.Row(b)
			gradRows[b] = make([]float64, cfg.RowWidth())
		}
	}
	sparseGrad := Params{Dense: make([]float64, cfg.DenseSize()), Rows: gradRows}
	fullGrad := make([]float64, cfg.Size())
	var m1, m2 Meter
	NewModel(cfg).AccumulateBatch(params, rows, sparseGrad, &m1)
	NewModel(cfg).AccumulateBatch(full, rows, cfg.View(fullGrad), &m2)

	if !reflect.DeepEqual(sparseGrad.Dense, cfg.View(fullGrad).Dense) {
		t.Error("dense gradients differ")
	}
	for b, g := range gradRows {
		if !reflect.DeepEqual(g, cfg.View(fullGrad).Rows.Row(b)) {
			t.Errorf("bucket %d: gradients differ", b)
		}
	}
	if m1.Loss() != m2.Loss() {
		t.Errorf("losses differ: %v and %v", m1.Loss(), m2.Loss())
	}
}

func TestAdagradStep(t *testing.T) {
	params := []float64{1, 1, 1}
	accum := []float64{0, 3, 0}
	AdagradStep(0.5, params, accum, []float64{2, 2, 0}, 0.5)
	// g = 1: accum 1 and 4, steps 0.5·1/1 and 0.5·1/2; a zero gradient
	// leaves its entry alone.
	want, wantAccum := []float64{0.5, 0.75, 1}, []float64{1, 4, 0}
	if !reflect.DeepEqual(params, want) || !reflect.DeepEqual(accum, wantAccum) {
		t.Fatalf("params %v accum %v, want %v and %v", params, accum, want, wantAccum)
	}
}

func TestTrainingApproachesTheOptimum(t *testing.T) {
	// Single-process training: the model can learn what the true model knows.
	src := NewSource(1)
	train, test := src.Rows(TrainSplit, 20000), src.Rows(TestSplit, 5000)
	plan := DefaultPlan()
	cfg := plan.Model
	st := NewState(cfg, plan.Seed)
	m := NewModel(cfg)
	grad := make([]float64, cfg.Size())
	for range 3 {
		var meter Meter
		for lo := 0; lo < len(train); lo += plan.BatchSize {
			batch := train[lo:min(lo+plan.BatchSize, len(train))]
			clear(grad)
			m.AccumulateBatch(cfg.View(st.Params), batch, cfg.View(grad), &meter)
			AdagradStep(plan.LR, st.Params, st.Accum, grad, 1/float64(len(batch)))
		}
	}
	_, auc := m.Evaluate(cfg.View(st.Params), test)
	if optimal := src.OptimalAUC(test); auc < optimal-0.04 || auc > optimal+0.01 {
		t.Fatalf("test AUC %.4f after 3 passes, optimal %.4f", auc, optimal)
	}
}
