package datasplit

import (
	"reflect"
	"testing"
)

func TestContiguousStarts(t *testing.T) {
	tests := []struct {
		total int64
		parts int
		want  []int64
	}{
		{total: 9, parts: 3, want: []int64{0, 3, 6, 9}},
		{total: 7, parts: 3, want: []int64{0, 3, 5, 7}},
		{total: 2, parts: 4, want: []int64{0, 1, 2, 2, 2}},
		{total: 0, parts: 2, want: []int64{0, 0, 0}},
		{total: 5, parts: 1, want: []int64{0, 5}},
	}
	for _, tt := range tests {
		if got := contiguousStarts(tt.total, tt.parts); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("contiguousStarts(%d, %d) = %v, want %v", tt.total, tt.parts, got, tt.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"round-robin", "contiguous"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseMode("random"); err == nil {
		t.Error("ParseMode(random) accepted")
	}
}
