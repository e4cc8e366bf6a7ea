package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The operator must create the pods of many jobs about as fast as a client
// creating the same pods directly. These benchmarks measure both against the
// same API server: 100 jobs of 4 pods, and the 400 pods created straight from
// one client (QPS 500, 50 in flight).
//
//	go test ./test/integration -run '^$' -bench PodCreation -benchtime 3x
//
// (part of make bench; results in docs/benchmarks.md).

const (
	benchJobs         = 100
	benchPodsPerJob   = 4
	directInFlight    = 50
	directClientQPS   = 500
	directClientBurst = 500
)

func BenchmarkPodCreationDirect(b *testing.B) {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = directClientQPS, directClientBurst
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		ns := benchNamespace(b)
		pod := testutil.MakePaddleJob("direct", ns).Workers(1).Obj().Spec.Worker.Template
		b.StartTimer()
		start := time.Now()
		sem := make(chan struct{}, directInFlight)
		var wg sync.WaitGroup
		for p := 0; p < benchJobs*benchPodsPerJob; p++ {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("direct-%d", p), Namespace: ns}, Spec: pod.Spec}
				if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(time.Since(start).Seconds(), "s/400pods")
	}
}

func BenchmarkPodCreationOperator(b *testing.B) {
	startOperator(b)
	for i := 0; i < b.N; i++ {
		ns := benchNamespace(b)
		before := requestCounts(b)
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for j := 0; j < benchJobs; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				job := testutil.MakePaddleJob(fmt.Sprintf("job-%d", j), ns).PS(2).Workers(2).Obj()
				if err := k8s.Create(context.Background(), job); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		for {
			var pods corev1.PodList
			if err := k8s.List(context.Background(), &pods, client.InNamespace(ns), client.HasLabels{paddlev1.LabelJobName}); err != nil {
				b.Fatal(err)
			}
			if len(pods.Items) >= benchJobs*benchPodsPerJob {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.StopTimer()
		b.ReportMetric(time.Since(start).Seconds(), "s/400pods")
		waitOperatorDone(b, ns)
		writes := 0
		for k, v := range requestCounts(b) {
			if d := v - before[k]; d > 0 && !strings.Contains(k, "verb=GET") && !strings.Contains(k, "verb=LIST") && !strings.Contains(k, "verb=WATCH") {
				b.Logf("%6d %s", d, k)
				writes += d
			}
		}
		b.ReportMetric(float64(writes)/benchJobs, "writes/job")
	}
}

// waitOperatorDone waits until the operator has done what the jobs of ns
// ask: each job's status says its pods were created and its creation event
// is written, and the operator's work queue is empty with no reconcile
// running, so the writes counted after it are all the jobs cost.
func waitOperatorDone(b *testing.B, ns string) {
	b.Helper()
	var jobs paddlev1.PaddleJobList
	eventually(b, "every job's status and creation event", func() (bool, error) {
		if err := k8s.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		created := 0
		for _, j := range jobs.Items {
			if j.Status.IsConditionTrue(paddlev1.JobCreated) {
				created++
			}
		}
		events, err := clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=SuccessfulCreatePod"})
		if err != nil {
			return false, err
		}
		evented := map[string]bool{}
		for _, e := range events.Items {
			evented[e.InvolvedObject.Name] = true
		}
		return created == benchJobs && len(evented) == benchJobs, fmt.Errorf("%d jobs with their pods created, %d with the event", created, len(evented))
	})
	eventually(b, "the operator's work queue to drain", func() (bool, error) {
		depth, active, err := operatorQueue()
		return err == nil && depth == 0 && active == 0, fmt.Errorf("queue depth %v, reconciles running %v (%v)", depth, active, err)
	})
}

// operatorQueue reads, from the operator's in-process metrics, how many
// jobs wait in its work queue and how many reconciles run.
func operatorQueue() (depth, active float64, err error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, 0, err
	}
	var sawDepth, sawActive bool
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "controller" || l.GetValue() != "paddlejob" {
					continue
				}
				// The depth is kept per priority: the queue is their sum.
				switch f.GetName() {
				case "workqueue_depth":
					depth, sawDepth = depth+m.GetGauge().GetValue(), true
				case "controller_runtime_active_workers":
					active, sawActive = active+m.GetGauge().GetValue(), true
				}
			}
		}
	}
	if !sawDepth || !sawActive {
		return 0, 0, fmt.Errorf("the operator's queue metrics are missing")
	}
	return depth, active, nil
}

// requestCounts reads the API server's request counters by verb, resource,
// subresource and code.
func requestCounts(b testing.TB) map[string]int {
	raw, err := clientset.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		var n float64
		fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &n)
		key := ""
		for _, f := range []string{"verb", "resource", "subresource", "code"} {
			if i := strings.Index(line, f+`="`); i >= 0 {
				rest := line[i+len(f)+2:]
				key += f + "=" + rest[:strings.Index(rest, `"`)] + " "
			}
		}
		out[key] += int(n)
	}
	return out
}

func benchNamespace(b *testing.B) string {
	b.StopTimer()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	return ns.Name
}
