package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/progress"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// TestProgressOfWideAndDeep runs the wide & deep example, whose trainers
// report their progress with the Python SDK, and watches the job's status:
// its progress rises monotonically to 100%, its AUC shows before the job
// completes, the reports cost a bounded number of status writes, and the
// metric history is recorded. It runs alone (not in parallel): the API
// server counts the status writes of every PaddleJob together.
func TestProgressOfWideAndDeep(t *testing.T) {
	pj := suiteClient
	job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
	job.Name = "wd-progress"
	outputDir(t, job)
	const passes = 6
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaWorker, paddlev1.ReplicaPS} {
		c := &job.Spec.Replicas(rt).Template.Spec.Containers[0]
		// Rows enough for the training to last well over 15 s (960,000
		// rows: 30 s to 50 s here), so its reports are many.
		c.Args = []string{fmt.Sprintf("--passes=%d", passes), "--rows=960000"}
	}
	job.Namespace = newNamespace(t, pj)
	writesBefore := apiStatusWrites(t, pj)
	start := time.Now()
	createJob(t, pj, job)

	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	defer cancel()
	watched := watchProgressUntilFinished(t, pj, ctx, job)
	seen, aucBeforeEnd, etaSeen, done := watched.percents, watched.aucBeforeEnd, watched.etaSeen, watched.done
	elapsed := time.Since(start)
	mustComplete(t, pj, done)
	writes := apiStatusWrites(t, pj) - writesBefore
	t.Logf("PaddleJob completed in %s; percents seen %v; AUC %s before completion; %d status writes in all",
		elapsed.Round(100*time.Millisecond), seen, aucBeforeEnd, writes)

	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Errorf("progress went back from %d%% to %d%%: %v", seen[i-1], seen[i], seen)
		}
	}
	if len(seen) < 2 {
		t.Errorf("progress seen %v: want it to rise through several values", seen)
	}
	final := done.Status.Progress
	if final == nil || final.Percent == nil || *final.Percent != 100 {
		t.Fatalf("the completed job's progress is %+v, want 100%%", final)
	}
	if *final.Epoch != passes || *final.TotalEpochs != passes || final.Reporter != "wd-progress-worker-0" {
		t.Errorf("final progress %+v: want pass %d of %d reported by worker 0", final, passes, passes)
	}
	if aucBeforeEnd == "" {
		t.Errorf("no AUC in the status before the job completed")
	}
	if final.Metrics[0].Name != "auc" {
		t.Errorf("final metrics %v: want auc first", final.Metrics)
	}
	if !etaSeen {
		t.Error("no estimated time remaining was shown while the job ran")
	}
	// The bound: besides the job's own lifecycle (pods created, running,
	// workers succeeding, completion: under 10 writes for 4 pods), the
	// reports cost one write per StatusInterval (1 s) while they come,
	// plus the first and the final one.
	bound := 10 + int(math.Ceil(elapsed.Seconds()/progress.DefaultStatusInterval.Seconds())) + 2
	if writes > bound {
		t.Errorf("%d status writes over %s, want at most %d", writes, elapsed.Round(time.Second), bound)
	}
	perMinute := float64(writes) / elapsed.Minutes()
	t.Logf("status writes: %d over %s (%.1f a minute, bound %d)", writes, elapsed.Round(time.Second), perMinute, bound)

	// The metric history: every pass's AUC, within a flush interval.
	hist := waitForAUCHistory(t, pj, ctx, job, passes)
	if loss := series(hist, "loss"); len(loss) < passes {
		t.Errorf("the history has %d loss points, want at least %d", len(loss), passes)
	}
	names := []string{}
	for _, s := range hist.Metrics {
		names = append(names, s.Name)
	}
	t.Logf("history: %s; AUC per pass %v", strings.Join(names, ", "), series(hist, "auc"))
}

// progressWatched is what the job's status showed of its progress while
// it ran.
type progressWatched struct {
	percents     []int32 // distinct percents, in the order observed
	aucBeforeEnd string  // the first AUC shown before the job finished
	etaSeen      bool    // a time remaining was shown before 100%
	done         *paddlev1.PaddleJob
}

// watchProgressUntilFinished reads the job's status until it finishes,
// recording the progress it shows; it fails the test when ctx ends first.
func watchProgressUntilFinished(t *testing.T, pj *client.Client, ctx context.Context, job *paddlev1.PaddleJob) progressWatched {
	t.Helper()
	var w progressWatched
	for {
		got, err := pj.Get(ctx, job.Namespace, job.Name)
		if err != nil {
			dumpJob(t, pj, job.Namespace, job.Name)
			t.Fatalf("waiting for the job: %v", err)
		}
		if p := got.Status.Progress; p != nil && p.Percent != nil {
			if len(w.percents) == 0 || w.percents[len(w.percents)-1] != *p.Percent {
				w.percents = append(w.percents, *p.Percent)
			}
			w.etaSeen = w.etaSeen || (p.EstimatedSecondsRemaining != nil && *p.Percent < 100)
			if !got.Status.IsFinished() {
				for _, m := range p.Metrics {
					if m.Name == "auc" && w.aucBeforeEnd == "" {
						w.aucBeforeEnd = m.Value
					}
				}
			}
		}
		if got.Status.IsFinished() {
			w.done = got
			return w
		}
		select {
		case <-ctx.Done():
			dumpJob(t, pj, job.Namespace, job.Name)
			t.Fatalf("the job did not finish within %s; progress seen %v", jobTimeout, w.percents)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitForAUCHistory waits, a history flush interval and 15s at most, for
// the job's metric history to hold an AUC point for each of its passes,
// and returns it.
func waitForAUCHistory(t *testing.T, pj *client.Client, ctx context.Context, job *paddlev1.PaddleJob, passes int) progress.History {
	t.Helper()
	var hist progress.History
	poll(t, progress.DefaultHistoryFlush+15*time.Second, fmt.Sprintf("%d AUC points in the history", passes), func() (bool, string) {
		cm, err := pj.Clientset().CoreV1().ConfigMaps(job.Namespace).Get(ctx, progress.HistoryConfigMapName(job.Name), metav1.GetOptions{})
		if err == nil {
			if hist, err = progress.DecodeHistory(cm); err != nil {
				t.Fatal(err)
			}
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		n := len(series(hist, "auc"))
		return n >= passes, fmt.Sprintf("%d AUC points: %+v", n, hist)
	})
	return hist
}

func series(h progress.History, name string) [][2]float64 {
	for _, s := range h.Metrics {
		if s.Name == name {
			return s.Points
		}
	}
	return nil
}

// apiStatusWrites is the number of writes to any PaddleJob's status the API
// server has served (testutil.PaddleJobStatusWrites).
func apiStatusWrites(t *testing.T, pj *client.Client) int {
	t.Helper()
	n, err := testutil.PaddleJobStatusWrites(context.Background(), pj.Clientset().CoreV1().RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunShowsProgressAsItHappens runs the wide & deep example with
// `paddlejob run`, as a user would, its trainers reporting every second
// (the Python reporter sends at most one report a second, and the trainer
// reports every batch): run's output shows the progress rise through at
// least 5 distinct values before 100%, not 0% then 100% (issue 36). Once
// the job is over, its metric history holds every reported point: an AUC
// before training and after each pass (the last the final status's), and as
// many loss points as run showed percents at least, the last at the final
// status's step.
func TestRunShowsProgressAsItHappens(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
	job.Name = "wd-live"
	outputDir(t, job)
	const passes = 6
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaWorker, paddlev1.ReplicaPS} {
		// Rows enough to train for 15 s to 25 s here, so over 10 s of
		// reports.
		job.Spec.Replicas(rt).Template.Spec.Containers[0].Args = []string{fmt.Sprintf("--passes=%d", passes), "--rows=480000"}
	}
	ns := newNamespace(t, pj)
	file := filepath.Join(t.TempDir(), "wd-live.yaml")
	manifest, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := paddlejobCLI(t, []string{"KUBECONFIG=" + cluster.Kubeconfig()}, "run", "-f", file, "-n", ns)
	if code != 0 {
		t.Fatalf("paddlejob run: exit %d:\n%s", code, errOut)
	}
	percents := runPercents(errOut)
	t.Logf("percents shown by run: %v", percents)
	if below := len(percents) - 1; below < 5 || percents[below] != 100 {
		t.Errorf("run showed %d distinct percents before 100%%, want at least 5:\n%s", below, errOut)
	}

	done, err := pj.Get(context.Background(), ns, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, pj, done)
	final := done.Status.Progress
	var hist progress.History
	poll(t, jobTimeout, "the final history", func() (bool, string) {
		cm, err := pj.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), progress.HistoryConfigMapName(job.Name), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if hist, err = progress.DecodeHistory(cm); err != nil {
			t.Fatal(err)
		}
		loss := seriesOf(hist, "loss")
		last := len(loss.Steps) - 1
		if last < 0 || loss.Steps[last] == nil || final.Step == nil {
			return false, fmt.Sprintf("%d loss points, final progress %+v", len(loss.Points), final)
		}
		return *loss.Steps[last] == *final.Step, fmt.Sprintf("the last loss point at step %d, the final status at step %d", *loss.Steps[last], *final.Step)
	})
	// The trainer reports its AUC before training and after each pass,
	// each flushed (flush_progress); the other trainer's first report may
	// have come before worker 0's, and is kept too.
	auc := series(hist, "auc")
	if len(auc) < passes+1 {
		t.Errorf("the history has %d AUC points, want at least %d: before training and after each pass", len(auc), passes+1)
	} else if got, want := progress.FormatValue(auc[len(auc)-1][1]), metricValue(final, "auc"); got != want {
		t.Errorf("the history's last AUC is %s, the final status's %s", got, want)
	}
	if n := len(series(hist, "loss")); n < len(percents) {
		t.Errorf("the history has %d loss points, fewer than the %d reports run showed", n, len(percents))
	}
}

// trainingPercent is the percent of run's training line.
var trainingPercent = regexp.MustCompile(`training \[[#.]+\]\s+(\d+)%`)

// runPercents are the distinct percents `paddlejob run` printed, in order.
func runPercents(out string) []int {
	var seen []int
	for _, m := range trainingPercent.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.Atoi(m[1])
		if len(seen) == 0 || seen[len(seen)-1] != p {
			seen = append(seen, p)
		}
	}
	return seen
}

func metricValue(p *paddlev1.JobProgress, name string) string {
	for _, m := range p.Metrics {
		if m.Name == name {
			return m.Value
		}
	}
	return ""
}

func seriesOf(h progress.History, name string) progress.Series {
	for _, s := range h.Metrics {
		if s.Name == name {
			return s
		}
	}
	return progress.Series{}
}
