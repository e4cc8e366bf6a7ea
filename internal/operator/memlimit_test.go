package operator

import "testing"

func TestParseCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"536870912\n", 536870912, true},    // v2, 512Mi
		{"max\n", 0, false},                 // v2, no limit
		{"9223372036854771712\n", 0, false}, // v1, no limit
		{"", 0, false},
		{"garbage", 0, false},
	} {
		got, ok := parseCgroupMemoryLimit(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCgroupMemoryLimit(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
