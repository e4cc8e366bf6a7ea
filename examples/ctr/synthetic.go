package ctr

import (
	"math"
	"math/rand/v2"
)

// Split selects one of the two independent row streams of a Source.
type Split uint64

const (
	TrainSplit Split = 1
	TestSplit  Split = 2
)

// The other uses of a seed draw from PCG streams of their own.
const (
	truthStream = 0 // the hidden true model
	initStream  = 3 // NewState
)

// vocabSizes is the number of categories of each sparse field. Ids are drawn
// from a Zipf law, so a few categories are common and most are rare, as in
// real click logs.
var vocabSizes = [NumSparse]int{3, 4, 6, 10, 16, 25, 40, 64, 100, 160}

// Source is a deterministic synthetic click log. A hidden true model, the
// train rows and the test rows all derive from one seed: the same seed gives
// the same rows on every machine.
type Source struct {
	seed  uint64
	truth trueModel
}

// trueModel is the logit that generated the labels: additive per-category
// and dense weights plus three interactions a linear model cannot express.
type trueModel struct {
	bias     float64
	category [NumSparse][]float64
	dense    [NumDense]float64
	denseX   float64     // weight of dense[0]*dense[1]
	catDense []float64   // by category of field 0, times dense[2]
	catCat   [][]float64 // by the categories of fields 1 and 2
}

// NewSource returns the synthetic data set of seed.
func NewSource(seed uint64) *Source {
	rng := rand.New(rand.NewPCG(seed, truthStream))
	t := trueModel{bias: -1.1, denseX: 0.6}
	for f, v := range vocabSizes {
		// Fields with more categories get larger weights: more signal, and
		// harder to learn.
		scale := 0.25 + 0.05*float64(f)
		t.category[f] = normals(rng, v, scale)
	}
	t.dense = [NumDense]float64{0.5, -0.4, 0.3, 0.2, 0}
	t.catDense = normals(rng, vocabSizes[0], 0.6)
	t.catCat = make([][]float64, vocabSizes[1])
	for i := range t.catCat {
		t.catCat[i] = normals(rng, vocabSizes[2], 0.5)
	}
	return &Source{seed: seed, truth: t}
}

func normals(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * rng.NormFloat64()
	}
	return out
}

// Rows returns the first n rows of a split. A longer request extends a
// shorter one: Rows(sp, n)[:k] equals Rows(sp, k).
func (s *Source) Rows(split Split, n int) []Row {
	rng := rand.New(rand.NewPCG(s.seed, uint64(split)))
	zipfs := make([]*rand.Zipf, NumSparse)
	for f, v := range vocabSizes {
		zipfs[f] = rand.NewZipf(rng, 1.1, 2, uint64(v-1))
	}
	rows := make([]Row, n)
	for i := range rows {
		r := &rows[i]
		for f := range r.Sparse {
			r.Sparse[f] = uint32(zipfs[f].Uint64())
		}
		for j := range r.Dense {
			// Four decimals, so the text format round-trips exactly.
			r.Dense[j] = math.Round(rng.NormFloat64()*1e4) / 1e4
		}
		r.Clicked = rng.Float64() < s.ClickProbability(r)
	}
	return rows
}

// ClickProbability is the true model's probability that r is clicked: the
// best any model can predict.
func (s *Source) ClickProbability(r *Row) float64 {
	t := &s.truth
	z := t.bias
	// Ids are reduced into the vocabularies so rows read from any file score.
	for f, c := range r.Sparse {
		z += t.category[f][int(c)%vocabSizes[f]]
	}
	for j, x := range r.Dense {
		z += t.dense[j] * x
	}
	z += t.denseX * r.Dense[0] * r.Dense[1]
	z += t.catDense[int(r.Sparse[0])%vocabSizes[0]] * r.Dense[2]
	z += t.catCat[int(r.Sparse[1])%vocabSizes[1]][int(r.Sparse[2])%vocabSizes[2]]
	return sigmoid(z)
}

// OptimalAUC is the AUC of the true model on rows: the Bayes-optimal AUC, which
// no trained model can beat in expectation.
func (s *Source) OptimalAUC(rows []Row) float64 {
	scores := make([]float64, len(rows))
	labels := make([]bool, len(rows))
	for i := range rows {
		scores[i] = s.ClickProbability(&rows[i])
		labels[i] = rows[i].Clicked
	}
	return AUC(scores, labels)
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
