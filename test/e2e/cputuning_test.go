package e2e

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// ompThreadsLine is what the ResNet example prints after importing paddle:
// the OMP_NUM_THREADS Paddle computes with (its bootstrap writes back the
// value it uses, 1 when the pod sets none).
var ompThreadsLine = regexp.MustCompile(`(?m)^omp_num_threads=(\d+)$`)

// A worker whose CPU limit is 2 trains with two threads: the operator sets
// OMP_NUM_THREADS from the limit and Paddle keeps it; the job still trains.
// The examples without a limit keep Paddle's default of one thread (the
// other collective tests see it).
func TestCPULimitSizesPaddlesThreads(t *testing.T) {
	job := resNetWithCPU(t, "threads", "2", "")
	done, logs := runReadingLogs(t, job)
	checkCollectiveJob(t, done, logs)
	for pod, log := range logs {
		if got := ompThreads(log); got != "2" {
			t.Errorf("%s: Paddle computes with %q threads, want 2 (the pod's CPU limit):\n%s", pod, got, tail(log))
		}
	}
}

// resNetWithCPU is the collective example whose workers may use limit CPUs
// (requesting half a CPU, so both fit the node), with OMP_NUM_THREADS set
// in the template when threads is not empty.
func resNetWithCPU(t testing.TB, name, limit, threads string) *paddlev1.PaddleJob {
	t.Helper()
	job := loadJob(t, "examples/jobs/resnet.yaml")
	job.Name = name
	c := &job.Spec.Worker.Template.Spec.Containers[0]
	c.Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limit)},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
	}
	if threads != "" {
		c.Env = append(c.Env, corev1.EnvVar{Name: "OMP_NUM_THREADS", Value: threads})
	}
	outputDir(t, job)
	return job
}

// ompThreads is the thread count a ResNet example's log reports; "" when it
// reports none.
func ompThreads(log string) string {
	ms := ompThreadsLine.FindAllStringSubmatch(log, -1)
	if ms == nil {
		return ""
	}
	return ms[len(ms)-1][1]
}

// The collective example with a CPU limit of 2, computing on one thread (the
// template sets OMP_NUM_THREADS=1: Paddle's default before the operator
// tuned pods) and on the two the operator now gives it: time from the
// job's creation to its completion, mean of the runs. Part of make bench;
// alone:
//
//	go test ./test/e2e -run '^$' -bench CPUThreads -benchtime 3x
func BenchmarkCPUThreads(b *testing.B) {
	for _, v := range []struct{ name, threads string }{
		{"limit-2/threads-1", "1"},
		{"limit-2/threads-from-limit", ""},
	} {
		b.Run(v.name, func(b *testing.B) {
			var seconds float64
			for i := 0; i < b.N; i++ {
				job := resNetWithCPU(b, "threads", "2", v.threads)
				completed := timeToCompletion(b, job).Seconds()
				seconds += completed
				b.Logf("run %d: completed in %.1fs, test accuracy %.3f", i+1, completed, finalReport(b, job, collectiveFinal, 3))
			}
			b.ReportMetric(seconds/float64(b.N), "s-to-completed")
		})
	}
}
