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

// A worker given 1.5 CPUs (limit 2) computes on two threads: the operator
// sets OMP_NUM_THREADS from its request, rounded up, and Paddle keeps it;
// it still trains. A second job of two workers each limited to 2 CPUs but
// requesting half of one keeps one thread each, as the 2-core node cannot
// give both more. Examples without resources keep Paddle's default of one
// thread.
func TestCPURequestSizesPaddlesThreads(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	for _, tc := range []struct {
		name    string
		workers int32
		request string
		wantOMP string
	}{
		{"one worker given 1.5 CPUs", 1, "1500m", "2"},
		{"two workers given half a CPU each", 2, "500m", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := resNetWithCPU(t, "threads", tc.workers, tc.request, "")
			done, logs := runReadingLogs(t, pj, job)
			checkCollectiveJob(t, done, logs)
			for pod, log := range logs {
				if got := ompThreads(log); got != tc.wantOMP {
					t.Errorf("%s: Paddle computes with %q threads, want %s:\n%s", pod, got, tc.wantOMP, tail(log))
				}
			}
		})
	}
}

// resNetWithCPU is the collective example with workers requesting request
// CPUs (limit 2), with OMP_NUM_THREADS set in the template when threads is
// not empty.
func resNetWithCPU(t testing.TB, name string, workers int32, request, threads string) *paddlev1.PaddleJob {
	t.Helper()
	job := loadJob(t, "examples/jobs/resnet.yaml")
	job.Name = name
	job.Spec.Worker.Replicas = workers
	c := &job.Spec.Worker.Template.Spec.Containers[0]
	c.Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(request)},
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

// The collective example's single worker given 1.5 CPUs (limit 2),
// computing on one thread (the template sets OMP_NUM_THREADS=1: Paddle's
// default before the operator tuned pods) and on the two the operator now
// gives it; then two workers limited to 2 CPUs each but requesting half of
// one, forced to two threads each, as a limit-based rule would give them
// on this 2-core node. Time from the job's creation to its completion,
// mean of the runs. Part of make bench; alone:
//
//	go test ./test/e2e -run '^$' -bench CPUThreads -benchtime 3x
func BenchmarkCPUThreads(b *testing.B) {
	pj := suiteClient
	for _, v := range []struct {
		name             string
		workers          int32
		request, threads string
	}{
		{"1-worker/request-1.5/threads-1", 1, "1500m", "1"},
		{"1-worker/request-1.5/threads-from-request", 1, "1500m", ""},
		{"2-workers/request-0.5/threads-from-request", 2, "500m", ""},
		{"2-workers/request-0.5/threads-2", 2, "500m", "2"},
	} {
		b.Run(v.name, func(b *testing.B) {
			var seconds float64
			for i := 0; i < b.N; i++ {
				job := resNetWithCPU(b, "threads", v.workers, v.request, v.threads)
				completed := timeToCompletion(b, pj, job).Seconds()
				seconds += completed
				b.Logf("run %d: completed in %.1fs, test accuracy %.3f", i+1, completed, finalReport(b, pj, job, collectiveFinal, 3))
			}
			b.ReportMetric(seconds/float64(b.N), "s-to-completed")
		})
	}
}
