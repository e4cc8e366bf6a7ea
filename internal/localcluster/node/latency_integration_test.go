//go:build integration

package node

import (
	"strings"
	"testing"
	"time"
)

// TestPodStartLatency measures the time from creating a bound pod to its
// process's first output, which the log stamps.
func TestPodStartLatency(t *testing.T) {
	n := sharedNode(t)
	ns := n.namespace(t)
	var worst time.Duration
	for i, name := range []string{"first", "second", "third"} {
		created := time.Now()
		n.create(t, n.shellPod(ns, name, "echo started"))
		n.waitPhase(t, ns, name, "Succeeded")
		line := n.logs(t, ns, name, "main", "timestamps=true")
		ts, _, _ := strings.Cut(line, " ")
		out, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		latency := out.Sub(created)
		t.Logf("pod %d: created → first output in %s", i, latency)
		worst = max(worst, latency)
	}
	if worst > time.Second {
		t.Errorf("pod start latency %s, want well under a second", worst)
	}
}
