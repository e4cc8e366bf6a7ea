package ps

import (
	"reflect"
	"testing"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

func TestLayoutSplitsEveryParameterOnce(t *testing.T) {
	cfg := ctr.Config{Buckets: 10, EmbedDim: 2, Hidden: 3}
	st := ctr.NewState(cfg, 1)
	for i := range st.Params {
		st.Params[i], st.Accum[i] = float64(i), -float64(i)
	}
	for shards := 1; shards <= 4; shards++ {
		l := layout{model: cfg, shards: shards}
		owned, dense := 0, 0
		merged := &ctr.State{Config: cfg, Params: make([]float64, cfg.Size()), Accum: make([]float64, cfg.Size())}
		for s := range shards {
			for i := range l.localRows(s) {
				if b := l.bucket(s, i); l.owner(b) != s || l.local(b) != i {
					t.Fatalf("%d shards: local row %d of shard %d is bucket %d, owned by %d as row %d", shards, i, s, b, l.owner(b), l.local(b))
				}
			}
			owned += l.localRows(s)
			lo, hi := l.denseRange(s)
			dense += hi - lo
			if err := l.merge(merged, s, l.split(st, s)); err != nil {
				t.Fatal(err)
			}
		}
		if owned != cfg.Buckets || dense != cfg.DenseSize() {
			t.Fatalf("%d shards own %d buckets and %d dense values, want %d and %d", shards, owned, dense, cfg.Buckets, cfg.DenseSize())
		}
		if !reflect.DeepEqual(merged, st) {
			t.Fatalf("%d shards: split then merge changed the state", shards)
		}
	}
}

func TestMergeRejectsAWrongShard(t *testing.T) {
	cfg := ctr.Config{Buckets: 10, EmbedDim: 2, Hidden: 3}
	st := ctr.NewState(cfg, 1)
	l := layout{model: cfg, shards: 3}
	if err := l.merge(st, 1, l.split(st, 0)); err == nil {
		t.Fatal("merged shard 0's state as shard 1")
	}
}
