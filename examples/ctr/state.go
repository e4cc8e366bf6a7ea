package ctr

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// State is everything training carries from step to step: the flat parameter
// vector and its Adagrad accumulators, both of Config.Size() values.
type State struct {
	Config Config
	Params []float64
	Accum  []float64
}

// initialAccumulator starts every Adagrad sum, damping the first steps.
const initialAccumulator = 1e-6

// NewState is the deterministic initial state of a model for seed: wide
// weights and biases at zero, small random embeddings and hidden layer.
func NewState(cfg Config, seed uint64) *State {
	st := &State{
		Config: cfg,
		Params: make([]float64, cfg.Size()),
		Accum:  make([]float64, cfg.Size()),
	}
	for i := range st.Accum {
		st.Accum[i] = initialAccumulator
	}
	rng := rand.New(rand.NewPCG(seed, initStream))
	l := cfg.layout()
	w1Scale := 1 / math.Sqrt(float64(l.inputs))
	for i := l.w1; i < l.b1; i++ {
		st.Params[i] = w1Scale * rng.NormFloat64()
	}
	for i := l.w2; i < l.size; i++ {
		st.Params[i] = 0.1 * rng.NormFloat64()
	}
	rows := cfg.View(st.Params).Rows
	for b := range cfg.Buckets {
		for k, row := 1, rows.Row(uint32(b)); k < len(row); k++ {
			row[k] = 0.05 * rng.NormFloat64()
		}
	}
	return st
}

// AdagradStep applies one Adagrad update of learning rate lr with gradient
// grad·scale. Entries whose gradient is exactly zero are left alone, so a
// sparse update touches only the rows a batch used.
func AdagradStep(lr float64, params, accum, grad []float64, scale float64) {
	for i, g := range grad {
		if g == 0 {
			continue
		}
		g *= scale
		accum[i] += g * g
		params[i] -= lr * g / math.Sqrt(accum[i])
	}
}

// Fingerprint hashes the parameters and accumulators bit for bit: workers
// that log the same fingerprint hold the same state.
func (s *State) Fingerprint() uint64 {
	h := fnv.New64a()
	var buf [8]byte
	for _, part := range [][]float64{s.Params, s.Accum} {
		for _, x := range part {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
			h.Write(buf[:])
		}
	}
	return h.Sum64()
}
