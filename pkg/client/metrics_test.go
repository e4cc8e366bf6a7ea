package client

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	opprogress "github.com/paddlejob/paddlejob/internal/operator/progress"
)

// statusVectorsDir holds the statuses and metric histories both SDKs read
// as numbers and times (test/vectors/README.md).
const statusVectorsDir = "../../test/vectors/status"

type statusVector struct {
	Status   paddlev1.PaddleJobStatus `json:"status"`
	History  *opprogress.History      `json:"history"`
	Expected struct {
		Metrics []Metric `json:"metrics"`
		Times   struct {
			StartTime       *time.Time           `json:"startTime"`
			CompletionTime  *time.Time           `json:"completionTime"`
			LastRestartTime *time.Time           `json:"lastRestartTime"`
			LastUpdateTime  *time.Time           `json:"progress.lastUpdateTime"`
			Conditions      map[string]time.Time `json:"conditions"`
		} `json:"times"`
		History []struct {
			Name   string `json:"name"`
			Points []struct {
				Time  time.Time `json:"time"`
				Value float64   `json:"value"`
				Step  *int64    `json:"step"`
			} `json:"points"`
		} `json:"history"`
	} `json:"expected"`
}

// Each shared status gives the metrics and times the vector expects, as
// the Python SDK's JobStatus gives them.
func TestStatusVectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(statusVectorsDir, "*.json"))
	if err != nil || len(files) < 5 {
		t.Fatalf("shared status vectors missing in %s: %v %v", statusVectorsDir, files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var v statusVector
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatal(err)
			}
			job := &paddlev1.PaddleJob{Status: v.Status}
			got := LatestMetrics(job)
			if v.Expected.Metrics == nil && v.Status.Progress != nil {
				t.Errorf("progress %+v, want none", v.Status.Progress)
			}
			if len(got) != len(v.Expected.Metrics) || len(got) > 0 && !reflect.DeepEqual(got, v.Expected.Metrics) {
				t.Errorf("metrics %+v\nwant %+v", got, v.Expected.Metrics)
			}
			checkTimes(t, v)
			checkHistory(t, v)
		})
	}
}

func checkTimes(t *testing.T, v statusVector) {
	t.Helper()
	st, want := v.Status, v.Expected.Times
	var lastUpdate *metav1.Time
	if st.Progress != nil {
		lastUpdate = st.Progress.LastUpdateTime
	}
	var lastRestart *time.Time
	if st.LastRestartTime != nil {
		lastRestart = &st.LastRestartTime.Time
	}
	for _, c := range []struct {
		field     string
		got, want *time.Time
	}{
		{"startTime", metaTime(st.StartTime), want.StartTime},
		{"completionTime", metaTime(st.CompletionTime), want.CompletionTime},
		{"lastRestartTime", lastRestart, want.LastRestartTime},
		{"progress.lastUpdateTime", metaTime(lastUpdate), want.LastUpdateTime},
	} {
		if (c.got == nil) != (c.want == nil) || c.got != nil && !c.got.Equal(*c.want) {
			t.Errorf("%s %v, want %v", c.field, c.got, c.want)
		}
	}
	if len(st.Conditions) != len(want.Conditions) {
		t.Errorf("%d conditions, want the times of %d", len(st.Conditions), len(want.Conditions))
	}
	for _, c := range st.Conditions {
		if w, ok := want.Conditions[c.Type]; !ok || !c.LastTransitionTime.Equal(&metav1.Time{Time: w}) {
			t.Errorf("condition %s changed at %v, want %v", c.Type, c.LastTransitionTime, w)
		}
	}
}

func metaTime(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func checkHistory(t *testing.T, v statusVector) {
	t.Helper()
	if v.History == nil {
		return
	}
	got := metricSeries(*v.History)
	if len(got) != len(v.Expected.History) {
		t.Fatalf("%d series, want %d: %+v", len(got), len(v.Expected.History), got)
	}
	for i, w := range v.Expected.History {
		g := got[i]
		if g.Name != w.Name || len(g.Points) != len(w.Points) {
			t.Errorf("series %d: %s with %d points, want %s with %d", i, g.Name, len(g.Points), w.Name, len(w.Points))
			continue
		}
		for j, wp := range w.Points {
			gp := g.Points[j]
			if !gp.Time.Equal(wp.Time) || gp.Time.Location() != time.UTC || gp.Value != wp.Value || !reflect.DeepEqual(gp.Step, wp.Step) {
				t.Errorf("%s point %d: %v %v step %v, want %v %v step %v", g.Name, j, gp.Time, gp.Value, ptrString(gp.Step), wp.Time, wp.Value, ptrString(wp.Step))
			}
		}
	}
}

func ptrString(p *int64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatInt(*p, 10)
}

func TestLatestMetric(t *testing.T) {
	job := &paddlev1.PaddleJob{Status: paddlev1.PaddleJobStatus{Progress: &paddlev1.JobProgress{Metrics: []paddlev1.ProgressMetric{
		{Name: "loss", Value: "0.25"}, {Name: "odd", Value: "NaN"},
	}}}}
	if v, ok := LatestMetric(job, "loss"); !ok || v != 0.25 {
		t.Errorf("loss %v %v, want 0.25", v, ok)
	}
	for _, name := range []string{"odd", "auc"} {
		if v, ok := LatestMetric(job, name); ok {
			t.Errorf("%s %v, want none", name, v)
		}
	}
	if m := LatestMetrics(&paddlev1.PaddleJob{}); m != nil {
		t.Errorf("metrics of a job without progress %v, want nil", m)
	}
}

// MetricHistory reads the job's own ConfigMap, and nothing from another's
// of the same name.
func TestMetricHistory(t *testing.T) {
	job := &paddlev1.PaddleJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wd", UID: "u-1"}}
	cm := func(uid types.UID) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wd-metrics", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: paddlev1.GroupVersion.String(), Kind: "PaddleJob", Name: "wd", UID: uid, Controller: ptr.To(true),
			}}},
			Data: map[string]string{opprogress.HistoryKey: `{"metrics":[{"name":"loss","points":[[1795600830.5,0.5]]}]}`},
		}
	}
	ctx := context.Background()
	got, err := NewForClients(nil, nil, kfake.NewClientset()).MetricHistory(ctx, job)
	if err != nil || got != nil {
		t.Errorf("no ConfigMap: %+v %v, want none", got, err)
	}
	got, err = NewForClients(nil, nil, kfake.NewClientset(cm("u-0"))).MetricHistory(ctx, job)
	if err != nil || got != nil {
		t.Errorf("an earlier job's ConfigMap: %+v %v, want none", got, err)
	}
	got, err = NewForClients(nil, nil, kfake.NewClientset(cm("u-1"))).MetricHistory(ctx, job)
	want := []MetricSeries{{Name: "loss", Points: []MetricPoint{{Time: time.Date(2026, 11, 25, 10, 0, 30, 5e8, time.UTC), Value: 0.5}}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("the job's history %+v %v\nwant %+v", got, err, want)
	}
}
