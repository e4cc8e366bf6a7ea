package ctr

import (
	"math"
	"testing"
)

func TestFingerprint(t *testing.T) {
	base := NewState(smallConfig, 1)
	tests := []struct {
		name string
		edit func(*State)
		same bool
	}{
		{"identical copy", func(*State) {}, true},
		{"one parameter's last bit", func(s *State) { s.Params[7] = math.Nextafter(s.Params[7], 1) }, false},
		{"one accumulator", func(s *State) { s.Accum[0] *= 2 }, false},
		{"negative zero", func(s *State) { s.Params[0] = math.Copysign(0, -1) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &State{Config: base.Config, Params: append([]float64(nil), base.Params...), Accum: append([]float64(nil), base.Accum...)}
			tt.edit(st)
			if got := st.Fingerprint() == base.Fingerprint(); got != tt.same {
				t.Errorf("same fingerprint: %v, want %v", got, tt.same)
			}
		})
	}
}
