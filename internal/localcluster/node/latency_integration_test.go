//go:build integration

package node

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// How long a bound pod takes from its creation to its process's first
// output, which the log stamps:
//
//	go test -tags integration ./internal/localcluster/node -run '^$' -bench PodStart -benchtime 5x
//
// (part of make bench; results in docs/benchmarks.md).
func BenchmarkPodStart(b *testing.B) {
	n := sharedNode(b)
	ns := n.namespace(b)
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("start-%d", i)
		created := time.Now()
		n.create(b, n.shellPod(ns, name, "echo started"))
		n.waitPhase(b, ns, name, "Succeeded")
		line := n.logs(b, ns, name, "main", "timestamps=true")
		ts, _, _ := strings.Cut(line, " ")
		out, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			b.Fatalf("log line %q: %v", line, err)
		}
		total += out.Sub(created)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-created-to-output")
}
