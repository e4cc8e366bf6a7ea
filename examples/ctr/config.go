package ctr

import (
	"errors"
	"fmt"
)

// Config is the shape of the wide & deep model.
type Config struct {
	// Buckets is how many rows the sparse table has: every (field, id) pair
	// is hashed into one. Each row holds the pair's wide weight and its
	// EmbedDim-long embedding.
	Buckets  int `json:"buckets"`
	EmbedDim int `json:"embed_dim"`
	// Hidden is the width of the deep part's hidden layer.
	Hidden int `json:"hidden"`
}

// DefaultConfig is small enough to all-reduce whole every step.
func DefaultConfig() Config { return Config{Buckets: 1 << 12, EmbedDim: 8, Hidden: 16} }

// Validate reports a config no model can have.
func (c Config) Validate() error {
	var errs []error
	if c.Buckets < 1 {
		errs = append(errs, fmt.Errorf("buckets must be positive, got %d", c.Buckets))
	}
	if c.EmbedDim < 1 {
		errs = append(errs, fmt.Errorf("embedding dimension must be positive, got %d", c.EmbedDim))
	}
	if c.Hidden < 1 {
		errs = append(errs, fmt.Errorf("hidden width must be positive, got %d", c.Hidden))
	}
	return errors.Join(errs...)
}

// The parameters are one flat vector: the dense part (laid out by layout),
// then the sparse table, bucket after bucket, RowWidth values each.

// RowWidth is the length of one sparse-table row: wide weight, embedding.
func (c Config) RowWidth() int { return 1 + c.EmbedDim }

// DenseSize is the length of the dense part of the parameter vector.
func (c Config) DenseSize() int { return c.layout().size }

// Size is the length of the whole parameter vector.
func (c Config) Size() int { return c.DenseSize() + c.Buckets*c.RowWidth() }

// layout gives the offset of each block in the dense part.
type layout struct {
	bias      int // the logit's bias
	denseWide int // NumDense weights of the wide part on the dense features
	w1        int // Hidden x inputs, row-major
	b1        int // Hidden
	w2        int // Hidden: hidden layer to logit
	inputs    int // width of the deep part's input: embeddings, then dense features
	size      int
}

func (c Config) layout() layout {
	l := layout{bias: 0, denseWide: 1, inputs: NumSparse*c.EmbedDim + NumDense}
	l.w1 = l.denseWide + NumDense
	l.b1 = l.w1 + c.Hidden*l.inputs
	l.w2 = l.b1 + c.Hidden
	l.size = l.w2 + c.Hidden
	return l
}

// Bucket is the sparse-table row of category id of a field. The hash is
// fixed, so every process agrees on it.
func (c Config) Bucket(field int, id uint32) uint32 {
	return uint32(splitmix64(uint64(field)<<32|uint64(id)) % uint64(c.Buckets))
}

// RowBuckets is the bucket of each sparse field of r.
func (c Config) RowBuckets(r *Row) [NumSparse]uint32 {
	var out [NumSparse]uint32
	for f, id := range r.Sparse {
		out[f] = c.Bucket(f, id)
	}
	return out
}

// splitmix64 is a fast, well-mixed 64-bit hash.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
