package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// How long the real-Paddle examples take on the local cluster, from
// submission to every pod running and to completion, at 2 to 8 workers:
//
//	make bench   (go test ./test/e2e -run '^$' -bench Example -benchtime 1x)
//
// Results are recorded in docs/benchmarks.md with the machine they ran on.
func BenchmarkExample(b *testing.B) {
	pj := suiteClient
	for _, example := range []struct {
		name, file string
		ps         int32
		workers    []int32
	}{
		// At 8 workers real Paddle does not finish on a 2-core machine: the
		// PS example hangs in its GEO start-up barrier, the collective one's
		// Gloo rendezvous times out (docs/benchmarks.md).
		{"wide-and-deep", "examples/jobs/wide-and-deep.yaml", 2, []int32{2, 4}},
		{"collective", "examples/jobs/resnet.yaml", 0, []int32{2, 4}},
	} {
		for _, workers := range example.workers {
			b.Run(fmt.Sprintf("%s/workers=%d", example.name, workers), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					running, completed := runExampleOnce(b, pj, example.file, example.ps, workers)
					b.ReportMetric(running.Seconds(), "s-to-running")
					b.ReportMetric(completed.Seconds(), "s-to-completed")
				}
			})
		}
	}
}

// runExampleOnce runs one example job and returns the times from its
// creation to every pod running and to its completion.
func runExampleOnce(b *testing.B, pj *client.Client, file string, ps, workers int32) (running, completed time.Duration) {
	b.Helper()
	job := loadJob(b, file)
	if ps > 0 {
		job.Spec.PS.Replicas = ps
	}
	job.Spec.Worker.Replicas = workers
	dir := b.TempDir()
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := job.Spec.Replicas(rt); rs != nil {
			for i := range rs.Template.Spec.Volumes {
				if v := &rs.Template.Spec.Volumes[i]; v.HostPath != nil {
					v.HostPath.Path = dir
				}
			}
		}
	}
	ns := newNamespace(b, pj)
	job.Namespace = ns
	// A job that never finishes fails the benchmark instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := pj.Create(ctx, job); err != nil {
		b.Fatal(err)
	}
	err := pj.Watch(ctx, ns, job.Name, func(s client.Snapshot) (bool, error) {
		if s.Job == nil {
			return false, nil
		}
		if running == 0 && (s.Job.Status.Phase == paddlev1.PaddleJobRunning || s.Job.Status.IsFinished()) {
			running = time.Since(start)
		}
		if s.Job.Status.IsFinished() {
			completed = time.Since(start)
			if s.Job.Status.Phase != paddlev1.PaddleJobCompleted {
				return true, fmt.Errorf("%s: %s", job.Name, client.FailureMessage(s.Job))
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		dumpJob(b, pj, ns, job.Name)
		b.Fatal(err)
	}
	if err := pj.Delete(ctx, ns, job.Name); err != nil {
		b.Fatal(err)
	}
	return running, completed
}
