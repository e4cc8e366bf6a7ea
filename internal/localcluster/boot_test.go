package localcluster

import "testing"

// The node advertises the host's CPUs and memory unless up --capacity says
// otherwise; the emulated GPUs always.
func TestCapacityArg(t *testing.T) {
	for _, tc := range []struct {
		capacity string
		gpus     int
		want     string
	}{
		{"", 0, "nvidia.com/gpu=0"},
		{"", 4, "nvidia.com/gpu=4"},
		{"cpu=256,memory=1Ti", 4, "cpu=256,memory=1Ti,nvidia.com/gpu=4"},
		{" cpu=8, ", 0, "cpu=8,nvidia.com/gpu=0"},
	} {
		if got := capacityArg(tc.capacity, tc.gpus); got != tc.want {
			t.Errorf("capacityArg(%q, %d) = %q, want %q", tc.capacity, tc.gpus, got, tc.want)
		}
	}
}
