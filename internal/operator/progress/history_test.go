package progress

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	w := &HistoryWriter{Store: store, Client: c, Reader: c}
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

// The writer writes only a ConfigMap that is the job's: one it created, or
// one with an owner reference to the job's UID. A ConfigMap of the
// history's name that is another's is left as it is (no owner reference
// added, which would have the garbage collector delete it with the job),
// and the job gets one Warning event naming it.
func TestHistoryWriterNeverTakesOverAnotherConfigMap(t *testing.T) {
	const uid = types.UID("uid-prometheus")
	job := types.NamespacedName{Namespace: "monitoring", Name: "prometheus"}
	key := types.NamespacedName{Namespace: job.Namespace, Name: HistoryConfigMapName(job.Name)}
	jobRef := func(uid types.UID, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: paddlev1.GroupVersion.String(), Kind: "PaddleJob", Name: job.Name, UID: uid, Controller: &controller}
	}
	configMap := func(owners ...metav1.OwnerReference) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{"app": "prometheus"}, OwnerReferences: owners},
			Data:       map[string]string{"prometheus.yml": "scrape_configs: []\n"},
		}
	}
	for _, tc := range []struct {
		name     string
		existing *corev1.ConfigMap
		// written: the history is in the ConfigMap; events: the job's.
		written bool
		events  []string
	}{
		{name: "none: created, the job's", written: true},
		{name: "another's, without owners", existing: configMap(),
			events: []string{"Warning " + ReasonHistoryNotWritten + " ConfigMap monitoring/prometheus-metrics exists and is not PaddleJob prometheus's"}},
		{name: "another object's", existing: configMap(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "prometheus", UID: uid}),
			events: []string{"Warning " + ReasonHistoryNotWritten + " ConfigMap monitoring/prometheus-metrics exists"}},
		{name: "an earlier job's of that name: left to the garbage collector, silently", existing: configMap(jobRef("uid-earlier", true))},
		{name: "the job's, written by an earlier operator (no controller flag)", existing: configMap(jobRef(uid, false)), written: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = corev1.AddToScheme(scheme)
			_ = paddlev1.AddToScheme(scheme)
			b := clientfake.NewClientBuilder().WithScheme(scheme)
			if tc.existing != nil {
				b = b.WithObjects(tc.existing)
			}
			c := b.Build()
			var before corev1.ConfigMap
			if tc.existing != nil {
				if err := c.Get(t.Context(), key, &before); err != nil {
					t.Fatal(err)
				}
			}
			rec := events.NewFakeRecorder(10)
			// Two reports, two flushes: one event at most.
			flushTwoLossReports(t, c, rec, job, uid)

			var after corev1.ConfigMap
			if err := c.Get(t.Context(), key, &after); err != nil {
				t.Fatal(err)
			}
			if tc.written {
				h, err := DecodeHistory(&after)
				if err != nil || len(h.Metrics) != 1 || len(h.Metrics[0].Points) != 2 {
					t.Errorf("history %+v (%v), want both loss points", h, err)
				}
				if ownership(after.OwnerReferences, job.Name, uid) != ownedByJob {
					t.Errorf("owners %+v, want the job", after.OwnerReferences)
				}
			} else if !equality.Semantic.DeepEqual(before, after) {
				t.Errorf("the ConfigMap changed:\n%+v\nwant\n%+v", after, before)
			}
			checkEventPrefixes(t, rec, tc.events)
		})
	}
}

// flushTwoLossReports has a history writer on client c put two loss
// reports of the job's worker 0, a minute apart, flushing after each.
func flushTwoLossReports(t *testing.T, c client.Client, rec events.EventRecorder, job types.NamespacedName, uid types.UID) {
	t.Helper()
	store := NewStore(Options{ReportRate: 100, ReportBurst: 100, HistoryFlush: time.Second})
	now := time.Unix(1_700_000_000, 0)
	store.now = func() time.Time { return now }
	w := &HistoryWriter{Store: store, Client: c, Reader: c, Recorder: rec}
	for i := range 2 {
		if err := store.Put(job, uid, "prometheus-worker-0", 0, Report{Metrics: Metrics{{"loss", 0.7 - float64(i)/10}}}); err != nil {
			t.Fatal(err)
		}
		w.flush(t.Context())
		now = now.Add(time.Minute)
	}
}

// checkEventPrefixes checks that rec recorded exactly len(want) events,
// each starting with its want; it closes rec.
func checkEventPrefixes(t *testing.T, rec *events.FakeRecorder, want []string) {
	t.Helper()
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %d", got, len(want))
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("event %q, want %q...", got[i], want[i])
		}
	}
}

// A ConfigMap that changes hands after the writer wrote it (its owner
// reference removed, say, to keep it past the job) is seen at the next
// write: the update is conditional on the resourceVersion last written.
func TestHistoryWriterSeesAConfigMapThatChangedHands(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = paddlev1.AddToScheme(scheme)
	c := clientfake.NewClientBuilder().WithScheme(scheme).Build()
	store := NewStore(Options{ReportRate: 100, ReportBurst: 100, HistoryFlush: time.Second})
	now := time.Unix(1_700_000_000, 0)
	store.now = func() time.Time { return now }
	rec := events.NewFakeRecorder(10)
	w := &HistoryWriter{Store: store, Client: c, Reader: c, Recorder: rec}
	job := types.NamespacedName{Namespace: "ns", Name: "wd"}
	key := types.NamespacedName{Namespace: "ns", Name: HistoryConfigMapName("wd")}
	report := func(v float64) {
		t.Helper()
		if err := store.Put(job, "uid-wd", "wd-worker-0", 0, Report{Metrics: Metrics{{"auc", v}}}); err != nil {
			t.Fatal(err)
		}
		w.flush(t.Context())
		now = now.Add(time.Minute)
	}
	report(0.6)
	var cm corev1.ConfigMap
	if err := c.Get(t.Context(), key, &cm); err != nil || len(cm.OwnerReferences) != 1 {
		t.Fatalf("ConfigMap %+v (%v), want it written and owned", cm.ObjectMeta, err)
	}
	cm.OwnerReferences = nil
	cm.Data = map[string]string{"kept": "by its new owner"}
	if err := c.Update(t.Context(), &cm); err != nil {
		t.Fatal(err)
	}
	report(0.7)
	var after corev1.ConfigMap
	if err := c.Get(t.Context(), key, &after); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(cm, after) {
		t.Errorf("the ConfigMap changed after it changed hands:\n%+v\nwant\n%+v", after, cm)
	}
	if len(rec.Events) != 1 {
		t.Errorf("%d events, want one saying the history is not written", len(rec.Events))
	}
}
