package progress

import (
	"context"
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
