package ps

import (
	"fmt"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// layout is how the parameter vector is split across pservers: bucket b
// belongs to pserver b % shards, and the dense part is cut into contiguous
// slices, one per pserver.
type layout struct {
	model  ctr.Config
	shards int
}

func (l layout) owner(bucket uint32) int { return int(bucket) % l.shards }

// local is the index of bucket among its owner's rows.
func (l layout) local(bucket uint32) int { return int(bucket) / l.shards }

// bucket is the bucket of local row i of shard.
func (l layout) bucket(shard, i int) uint32 { return uint32(i*l.shards + shard) }

// localRows is how many buckets shard owns.
func (l layout) localRows(shard int) int {
	return (l.model.Buckets - shard + l.shards - 1) / l.shards
}

// denseRange is the slice [lo, hi) of the dense part shard owns.
func (l layout) denseRange(shard int) (lo, hi int) {
	d := l.model.DenseSize()
	return shard * d / l.shards, (shard + 1) * d / l.shards
}

// shardState is one pserver's part of a ctr.State: its dense slice and its
// rows in local order, each with its Adagrad accumulators.
type shardState struct {
	Dense, DenseAccum []float64
	Rows, RowsAccum   []float64
}

// split cuts shard's part out of st.
func (l layout) split(st *ctr.State, shard int) *shardState {
	lo, hi := l.denseRange(shard)
	n, w := l.localRows(shard), l.model.RowWidth()
	out := &shardState{
		Dense:      append([]float64(nil), st.Params[lo:hi]...),
		DenseAccum: append([]float64(nil), st.Accum[lo:hi]...),
		Rows:       make([]float64, 0, n*w),
		RowsAccum:  make([]float64, 0, n*w),
	}
	params, accum := l.model.View(st.Params).Rows, l.model.View(st.Accum).Rows
	for i := range n {
		b := l.bucket(shard, i)
		out.Rows = append(out.Rows, params.Row(b)...)
		out.RowsAccum = append(out.RowsAccum, accum.Row(b)...)
	}
	return out
}

// merge copies shard's part into st.
func (l layout) merge(st *ctr.State, shard int, s *shardState) error {
	if err := l.check(shard, s); err != nil {
		return err
	}
	lo, _ := l.denseRange(shard)
	copy(st.Params[lo:], s.Dense)
	copy(st.Accum[lo:], s.DenseAccum)
	params, accum := l.model.View(st.Params).Rows, l.model.View(st.Accum).Rows
	w := l.model.RowWidth()
	for i := range l.localRows(shard) {
		b := l.bucket(shard, i)
		copy(params.Row(b), s.Rows[i*w:(i+1)*w])
		copy(accum.Row(b), s.RowsAccum[i*w:(i+1)*w])
	}
	return nil
}

// check reports a shard state whose sizes do not fit shard.
func (l layout) check(shard int, s *shardState) error {
	lo, hi := l.denseRange(shard)
	rows := l.localRows(shard) * l.model.RowWidth()
	if len(s.Dense) != hi-lo || len(s.DenseAccum) != hi-lo || len(s.Rows) != rows || len(s.RowsAccum) != rows {
		return fmt.Errorf("shard %d state has %d/%d dense and %d/%d sparse values, want %d and %d",
			shard, len(s.Dense), len(s.DenseAccum), len(s.Rows), len(s.RowsAccum), hi-lo, rows)
	}
	return nil
}
