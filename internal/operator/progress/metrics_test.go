package progress

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// gather returns the collector's series as name{labels} -> value.
func gather(t *testing.T) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

func TestGaugesMirrorTheStore(t *testing.T) {
	store := NewStore(Options{})
	CollectFrom(store)
	defer CollectFrom(nil)
	pct := 42.5
	if err := store.Put(types.NamespacedName{Namespace: "ns", Name: "wd"}, "uid", "wd-worker-0", 0,
		Report{Percent: &pct, Metrics: Metrics{{"auc", 0.75}, {"loss", 0.5}}}); err != nil {
		t.Fatal(err)
	}
	got := gather(t)
	want := map[string]float64{
		"paddlejob_job_progress_percent,namespace=ns,paddlejob=wd":   42.5,
		"paddlejob_job_metric,metric=auc,namespace=ns,paddlejob=wd":  0.75,
		"paddlejob_job_metric,metric=loss,namespace=ns,paddlejob=wd": 0.5,
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	store.Forget(types.NamespacedName{Namespace: "ns", Name: "wd"})
	if got := gather(t); len(got) != 0 {
		t.Errorf("series %v after the job was forgotten", got)
	}
}
