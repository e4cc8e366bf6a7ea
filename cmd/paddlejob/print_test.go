package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

func jobWithProgress() paddlev1.PaddleJob {
	now := time.Now()
	j := paddlev1.PaddleJob{ObjectMeta: metav1.ObjectMeta{Name: "wd", Namespace: "ns", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}}
	j.Spec.Worker = &paddlev1.ReplicaSpec{Replicas: 2}
	j.Status.Phase = paddlev1.PaddleJobRunning
	j.Status.Progress = &paddlev1.JobProgress{
		Percent: ptr.To[int32](66), Epoch: ptr.To[int64](4), TotalEpochs: ptr.To[int64](6), EstimatedSecondsRemaining: ptr.To[int64](14),
		Metrics:  []paddlev1.ProgressMetric{{Name: "auc", Value: "0.741"}, {Name: "loss", Value: "0.48"}},
		Reporter: "wd-worker-0", LastUpdateTime: ptr.To(metav1.NewTime(now.Add(-3 * time.Second))),
	}
	return j
}

func TestGetShowsProgress(t *testing.T) {
	var out bytes.Buffer
	if err := printJobs(&out, []paddlev1.PaddleJob{jobWithProgress(), {ObjectMeta: metav1.ObjectMeta{Name: "quiet"}}}, "wide", false, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "PROGRESS") || !strings.Contains(lines[0], "METRICS") {
		t.Errorf("header %q", lines[0])
	}
	for _, want := range []string{"66%", "14s", "auc=0.741 loss=0.48"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
	if f := strings.Fields(lines[2]); f[6] != "-" {
		t.Errorf("a job without progress shows %q, want -", f[6])
	}
}

func TestDescribeAndMetricsShowProgress(t *testing.T) {
	j := jobWithProgress()
	var out bytes.Buffer
	describeJob(&out, &j, nil, nil, nil, time.Now())
	if !strings.Contains(out.String(), "Progress:          [###############.........]  66%  epoch 4/6  ETA 14s  auc=0.741 loss=0.48") ||
		!strings.Contains(out.String(), "reported by wd-worker-0, 3s ago") {
		t.Errorf("describe:\n%s", out.String())
	}
	out.Reset()
	at := func(sec int64, v float64) client.MetricPoint {
		return client.MetricPoint{Time: time.Unix(sec, 0), Value: v}
	}
	hist := []client.MetricSeries{{Name: "auc", Points: []client.MetricPoint{at(100, 0.5), at(110, 0.7), at(120, 0.74)}}}
	printMetrics(&out, &j, hist, 40, 4)
	got := out.String()
	if !strings.Contains(got, "auc  latest 0.74  (3 points over 20s)") || !strings.Contains(got, "0.74 |  *") || !strings.Contains(got, " 0.5 |*") {
		t.Errorf("metrics:\n%s", got)
	}
	out.Reset()
	printMetrics(&out, &j, nil, 40, 4)
	if !strings.Contains(out.String(), "No metric history") {
		t.Errorf("metrics without history:\n%s", out.String())
	}
}

func TestOutputFormats(t *testing.T) {
	jobs := func() []paddlev1.PaddleJob {
		a, b := jobWithProgress(), jobWithProgress()
		b.Name = "other"
		return []paddlev1.PaddleJob{a, b}
	}
	tests := []struct {
		format string
		single bool
		want   string
	}{
		{"name", false, "paddlejob.batch.paddlepaddle.org/wd\npaddlejob.batch.paddlepaddle.org/other\n"},
		{"jsonpath={.items[*].metadata.name}", false, "wd other"},
		{"jsonpath={range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}", false, "wd Running\nother Running\n"},
		{"jsonpath=.status.progress.percent", true, "66"},
		{"jsonpath={.status.missing}", true, ""},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		list := jobs()
		if tc.single {
			list = list[:1]
		}
		if err := printJobs(&out, list, tc.format, false, tc.single); err != nil {
			t.Errorf("%s: %v", tc.format, err)
		} else if out.String() != tc.want {
			t.Errorf("%s: %q, want %q", tc.format, out.String(), tc.want)
		}
	}
}

func TestTableKeepsItsColumns(t *testing.T) {
	var out bytes.Buffer
	tb := &table{w: &out}
	tb.row([]string{"NAME", "PHASE", "AGE"})
	tb.row([]string{"wide-and-deep", "Running", "1m"})
	_ = tb.flush()
	tb.row([]string{"wd", "Failed", "2m"}) // a later row, as get -w prints it
	_ = tb.flush()
	want := "NAME            PHASE     AGE\nwide-and-deep   Running   1m\nwd              Failed    2m\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
