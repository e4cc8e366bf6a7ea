package e2e

import (
	"context"
	"io"
	"regexp"
	"strconv"
	"testing"
	"time"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// What the examples learn, as the docs quote it: the final test AUC of the
// wide & deep job `make demo` runs (2 parameter servers, 2 trainers) and
// the final loss and test accuracy of the ResNet job (2 workers), with the
// time each takes from submission to completion. `make bench` runs it
// (-bench Example); docs/benchmarks.md records the results, and the README
// and examples/README.md quote them from there.
func BenchmarkExampleResults(b *testing.B) {
	pj := suiteClient
	finalAUC := regexp.MustCompile(`(?m)^final: trainer=0 trainers=\d+ test_auc=([\d.]+) optimal_auc=([\d.]+)`)
	finalResNet := regexp.MustCompile(`(?m)^final: rank=0 world_size=\d+ loss=([\d.]+) test_accuracy=([\d.]+)`)
	b.Run("wide-and-deep", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			job, took := runExampleToEnd(b, pj, "examples/jobs/wide-and-deep.yaml")
			m := finalAUC.FindStringSubmatch(benchLog(b, pj, job.Namespace, job.Name+"-worker-0"))
			if m == nil {
				b.Fatalf("trainer 0 printed no final AUC")
			}
			auc, _ := strconv.ParseFloat(m[1], 64)
			optimum, _ := strconv.ParseFloat(m[2], 64)
			b.Logf("final test AUC %.4f (optimum %.4f), completed in %s, restartCount %d", auc, optimum, took.Round(100*time.Millisecond), job.Status.RestartCount)
			b.ReportMetric(auc, "auc")
			b.ReportMetric(took.Seconds(), "s-to-completed")
		}
	})
	b.Run("resnet", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			job, took := runExampleToEnd(b, pj, "examples/jobs/resnet.yaml")
			m := finalResNet.FindStringSubmatch(benchLog(b, pj, job.Namespace, job.Name+"-worker-0"))
			if m == nil {
				b.Fatalf("rank 0 printed no final loss")
			}
			loss, _ := strconv.ParseFloat(m[1], 64)
			accuracy, _ := strconv.ParseFloat(m[2], 64)
			b.Logf("final loss %.4f, test accuracy %.3f, completed in %s", loss, accuracy, took.Round(100*time.Millisecond))
			b.ReportMetric(loss, "loss")
			b.ReportMetric(accuracy, "accuracy")
			b.ReportMetric(took.Seconds(), "s-to-completed")
		}
	})
}

// runExampleToEnd runs an example job, as the repository has it but with a
// fresh output directory, and returns it finished and how long it took from
// its creation. It fails the benchmark unless the job completed.
func runExampleToEnd(b *testing.B, pj *client.Client, file string) (*paddlev1.PaddleJob, time.Duration) {
	b.Helper()
	job := loadJob(b, file)
	job.Namespace = newNamespace(b, pj)
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
	recoverable(job) // as make demo's user would run it: a Paddle crash restarts it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := pj.Create(ctx, job); err != nil {
		b.Fatal(err)
	}
	done, err := pj.WaitFor(ctx, job.Namespace, job.Name, client.Finished, 0)
	took := time.Since(start)
	if err != nil {
		dumpJob(b, pj, job.Namespace, job.Name)
		b.Fatal(err)
	}
	if done.Status.Phase != paddlev1.PaddleJobCompleted {
		dumpJob(b, pj, job.Namespace, job.Name)
		b.Fatalf("%s ended %s: %s", job.Name, done.Status.Phase, client.FailureMessage(done))
	}
	return done, took
}

// benchLog is a pod's whole log.
func benchLog(b *testing.B, pj *client.Client, ns, pod string) string {
	b.Helper()
	r, err := pj.Logs(context.Background(), ns, pod, client.LogOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}
