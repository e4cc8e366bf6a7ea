package progress

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

func TestHistoryWriterWritesEachCurveAtMostEveryFlush(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = paddlev1.AddToScheme(scheme)
	c := clientfake.NewClientBuilder().WithScheme(scheme).Build()
	store := NewStore(Options{ReportRate: 100, ReportBurst: 100, HistoryFlush: 30 * time.Second})
	now := time.Unix(1_700_000_000, 0)
	store.now = func() time.Time { return now }
	w := &HistoryWriter{Store: store, Client: c}
	job := types.NamespacedName{Namespace: "ns", Name: "wd"}
	ctx := context.Background()
	read := func() History {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: HistoryConfigMapName("wd")}, cm); err != nil {
			t.Fatal(err)
		}
		if cm.Labels[LabelHistoryOf] != "wd" || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != "uid-wd" {
			t.Errorf("ConfigMap labels %v, owners %v: want it labelled and owned by the job", cm.Labels, cm.OwnerReferences)
		}
		h, err := DecodeHistory(cm)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	if err := store.Put(job, "uid-wd", "wd-worker-0", 0, Report{Metrics: Metrics{{"auc", 0.6}, {"loss", 0.7}}}); err != nil {
		t.Fatal(err)
	}
	w.flush(ctx)
	h := read()
	if len(h.Metrics) != 2 || h.Metrics[0].Name != "auc" || h.Metrics[0].Points[0] != [2]float64{1_700_000_000, 0.6} {
		t.Fatalf("history %+v", h)
	}
	// A report within the flush interval waits for it.
	now = now.Add(10 * time.Second)
	_ = store.Put(job, "uid-wd", "wd-worker-0", 0, Report{Metrics: Metrics{{"auc", 0.7}}})
	w.flush(ctx)
	if n := len(read().Metrics[0].Points); n != 1 {
		t.Errorf("%d AUC points written within the flush interval, want the first only", n)
	}
	now = now.Add(30 * time.Second)
	w.flush(ctx)
	if pts := read().Metrics[0].Points; len(pts) != 2 || pts[1][1] != 0.7 {
		t.Errorf("AUC curve %v after the interval, want both points", pts)
	}
}

// Each point carries the step it was reported at: the report's own, else
// the latest one reported; a curve whose reports gave no step has none.
func TestHistoryRecordsTheStepOfEachPoint(t *testing.T) {
	store := NewStore(Options{ReportRate: 100, ReportBurst: 100})
	now := time.Unix(1_700_000_000, 0)
	store.now = func() time.Time { return now }
	job := types.NamespacedName{Namespace: "ns", Name: "wd"}
	step := func(n int64) *int64 { return &n }
	for _, rep := range []Report{
		{Metrics: Metrics{{"lr", 0.1}}},
		{Step: step(10), Metrics: Metrics{{"loss", 0.7}}},
		{Step: step(20), Metrics: Metrics{{"loss", 0.6}, {"auc", 0.71}}},
		{Metrics: Metrics{{"auc", 0.72}}}, // at step 20 still
	} {
		now = now.Add(time.Second)
		if err := store.Put(job, "uid-wd", "wd-worker-0", 0, rep); err != nil {
			t.Fatal(err)
		}
	}
	var hist History
	for _, h := range store.historyDue(now.Add(time.Hour)) {
		hist = historyOf(h)
	}
	steps := map[string][]string{}
	for _, s := range hist.Metrics {
		for _, st := range s.Steps {
			if st == nil {
				steps[s.Name] = append(steps[s.Name], "-")
			} else {
				steps[s.Name] = append(steps[s.Name], fmt.Sprint(*st))
			}
		}
		if s.Steps != nil && len(s.Steps) != len(s.Points) {
			t.Errorf("%s: %d steps for %d points", s.Name, len(s.Steps), len(s.Points))
		}
	}
	want := map[string][]string{"loss": {"10", "20"}, "auc": {"20", "20"}}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("steps %v, want %v (lr, reported before any step, has none)", steps, want)
	}
}
