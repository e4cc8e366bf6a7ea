package ctr

import (
	"bytes"
	"reflect"
	"testing"
)

func text(t *testing.T, rows []Row) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteRows(&buf, rows); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSourceIsDeterministic(t *testing.T) {
	tests := []struct {
		name       string
		a, b       []Row
		wantSameAs bool
	}{
		{"same seed", NewSource(1).Rows(TrainSplit, 2000), NewSource(1).Rows(TrainSplit, 2000), true},
		{"different seed", NewSource(1).Rows(TrainSplit, 2000), NewSource(2).Rows(TrainSplit, 2000), false},
		{"train and test", NewSource(1).Rows(TrainSplit, 2000), NewSource(1).Rows(TestSplit, 2000), false},
		{"prefix", NewSource(3).Rows(TestSplit, 5000)[:1000], NewSource(3).Rows(TestSplit, 1000), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same := bytes.Equal(text(t, tt.a), text(t, tt.b))
			if same != tt.wantSameAs {
				t.Fatalf("byte-identical = %v, want %v", same, tt.wantSameAs)
			}
		})
	}
}

func TestSourceLooksLikeClickLogs(t *testing.T) {
	src := NewSource(1)
	rows := src.Rows(TrainSplit, 20000)
	clicks := 0
	counts := make(map[uint32]int)
	for _, r := range rows {
		if r.Clicked {
			clicks++
		}
		counts[r.Sparse[NumSparse-1]]++
		for f, id := range r.Sparse {
			if int(id) >= vocabSizes[f] {
				t.Fatalf("field %d id %d out of its vocabulary of %d", f, id, vocabSizes[f])
			}
		}
	}
	if rate := float64(clicks) / float64(len(rows)); rate < 0.1 || rate > 0.5 {
		t.Errorf("click rate %.3f, want between 0.1 and 0.5", rate)
	}
	// Skewed vocabulary: the most common category is far above uniform.
	if top, uniform := counts[0], len(rows)/vocabSizes[NumSparse-1]; top < 5*uniform {
		t.Errorf("most common category of the last field seen %d times, uniform would be %d: not skewed", top, uniform)
	}
	if auc := src.OptimalAUC(src.Rows(TestSplit, 20000)); auc < 0.8 || auc > 0.95 {
		t.Errorf("optimal AUC %.4f, want a learnable but imperfect 0.8..0.95", auc)
	}
}

func TestClickProbabilityIsTheTruth(t *testing.T) {
	// Labels follow the true probabilities: within each probability decile
	// the click rate matches the mean probability.
	src := NewSource(5)
	rows := src.Rows(TrainSplit, 50000)
	var sumP, sumY [10]float64
	var n [10]int
	for i := range rows {
		p := src.ClickProbability(&rows[i])
		d := min(int(p*10), 9)
		sumP[d] += p
		n[d]++
		if rows[i].Clicked {
			sumY[d]++
		}
	}
	for d := range n {
		if n[d] < 500 {
			continue
		}
		meanP, rate := sumP[d]/float64(n[d]), sumY[d]/float64(n[d])
		if diff := meanP - rate; diff > 0.03 || diff < -0.03 {
			t.Errorf("decile %d: mean probability %.3f, click rate %.3f", d, meanP, rate)
		}
	}
}

func TestNewStateIsDeterministic(t *testing.T) {
	cfg := Config{Buckets: 64, EmbedDim: 4, Hidden: 3}
	a, b, c := NewState(cfg, 1), NewState(cfg, 1), NewState(cfg, 2)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different states")
	}
	if reflect.DeepEqual(a.Params, c.Params) {
		t.Error("different seeds, same parameters")
	}
}
