package termprogress

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

func TestChartDrawsARisingCurve(t *testing.T) {
	lines := Chart([]float64{0.5, 0.6, 0.7, 0.8}, 60, 4)
	want := []string{
		"0.8 |   *",
		"    |  *",
		"    | *",
		"0.5 |*",
		"    +----",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("chart:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// More points than columns are averaged into the width.
	many := make([]float64, 1000)
	for i := range many {
		many[i] = float64(i)
	}
	for _, l := range Chart(many, 50, 6) {
		if plot := l[strings.IndexAny(l, "|+")+1:]; len(plot) > 50 {
			t.Errorf("line %q plots more than 50 columns", l)
		}
	}
	if Chart(nil, 50, 6) != nil {
		t.Error("a chart of no values")
	}
}

func TestTrainingLine(t *testing.T) {
	p := &paddlev1.JobProgress{Percent: ptr.To[int32](50), Epoch: ptr.To[int64](3), TotalEpochs: ptr.To[int64](6),
		EstimatedSecondsRemaining: ptr.To[int64](75),
		Metrics:                   []paddlev1.ProgressMetric{{Name: "auc", Value: "0.73"}, {Name: "loss", Value: "0.41"}}}
	got := TrainingLine(p)
	want := "[############............]  50%  epoch 3/6  ETA 1m15s  auc=0.73 loss=0.41"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if TrainingLine(nil) != "" {
		t.Error("a line without progress")
	}
}
