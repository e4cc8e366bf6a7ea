package localcluster

import (
	"net"
	"strconv"
	"testing"
)

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

// The control plane's ports are distinct, free, and above the ephemeral
// range that outgoing connections draw from when the host leaves room there.
func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	first, last := portsAboveEphemeral()
	room := last-first >= 255
	t.Logf("ports above the ephemeral range: %d-%d", first, last)
	ports, err := freePorts(40)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if room && (p < first || p > last) {
			t.Errorf("port %d is outside %d-%d", p, first, last)
		}
		if seen[p] {
			t.Errorf("port %d picked twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
	if len(ports) != 40 {
		t.Errorf("%d ports, want 40", len(ports))
	}
}
