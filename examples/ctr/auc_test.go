package ctr

import (
	"math"
	"testing"
)

func TestAUC(t *testing.T) {
	tests := []struct {
		name   string
		scores []float64
		labels []bool
		want   float64
	}{
		{"perfect", []float64{0.1, 0.2, 0.8, 0.9}, []bool{false, false, true, true}, 1},
		{"inverted", []float64{0.9, 0.8, 0.2, 0.1}, []bool{false, false, true, true}, 0},
		{"all tied", []float64{0.5, 0.5, 0.5, 0.5}, []bool{false, true, false, true}, 0.5},
		// Pairs (pos, neg): (0.35, 0.1) (0.35, 0.4) (0.8, 0.1) (0.8, 0.4): 3 of 4.
		{"three of four pairs", []float64{0.1, 0.35, 0.4, 0.8}, []bool{false, true, false, true}, 0.75},
		// One tied pair counts one half: (0.5, 0.5) and (0.5, 0.2) → 1.5 of 2.
		{"tie counts half", []float64{0.2, 0.5, 0.5}, []bool{false, false, true}, 0.75},
		{"unsorted input", []float64{0.9, 0.1, 0.35, 0.4}, []bool{true, false, true, false}, 0.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AUC(tt.scores, tt.labels); math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("AUC = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAUCIsNaNWithOneClass(t *testing.T) {
	for _, labels := range [][]bool{{true, true}, {false, false}, {}} {
		if got := AUC(make([]float64, len(labels)), labels); !math.IsNaN(got) {
			t.Errorf("AUC with labels %v = %v, want NaN", labels, got)
		}
	}
}
