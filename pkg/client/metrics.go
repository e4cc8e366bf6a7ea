package client

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	opprogress "github.com/paddlejob/paddlejob/internal/operator/progress"
)

// Metric is one named metric's value, as a number.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// decimal is how the status holds a metric's value (api/v1 ProgressMetric).
// It is checked before strconv.ParseFloat, which also takes "NaN", "Inf",
// hexadecimal and underscores; the Python SDK accepts exactly the same.
var decimal = regexp.MustCompile(`^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

// LatestMetrics returns the latest value of each metric the job's training
// program reported, as numbers, in the order first reported; nil before any
// report. A value that is not a finite decimal number (the operator never
// writes one) is left out; job.Status.Progress.Metrics keeps it as written.
// The Python SDK's JobProgress.metrics reads them the same way
// (test/vectors/status).
func LatestMetrics(job *paddlev1.PaddleJob) []Metric {
	p := job.Status.Progress
	if p == nil {
		return nil
	}
	var out []Metric
	for _, m := range p.Metrics {
		if v, ok := metricValue(m.Value); ok {
			out = append(out, Metric{Name: m.Name, Value: v})
		}
	}
	return out
}

// LatestMetric returns the latest value of the named metric; false when
// the program reported none of that name, or LatestMetrics leaves it out.
func LatestMetric(job *paddlev1.PaddleJob, name string) (float64, bool) {
	for _, m := range LatestMetrics(job) {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

func metricValue(s string) (float64, bool) {
	if !decimal.MatchString(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) { // out of range: ±Inf
		return 0, false
	}
	return v, true
}

// MetricPoint is one recorded value of a metric.
type MetricPoint struct {
	// Time is when the operator received the report, to the millisecond, in UTC.
	Time  time.Time
	Value float64
	// Step is the training step the program reported with it, if any.
	Step *int64
}

// MetricSeries is one metric's recorded curve, oldest point first.
type MetricSeries struct {
	Name   string
	Points []MetricPoint
}

// MetricHistory returns the curve of each metric the job's training program
// reported, in the order first reported. The operator records them in the
// ConfigMap NAME-metrics, about every second while reports come, and at
// once when the job finishes (docs/progress.md); reading it needs get on
// configmaps. It is nil, with no error, when nothing is recorded yet or
// that ConfigMap is not the job's (not owned by it).
func (c *Client) MetricHistory(ctx context.Context, job *paddlev1.PaddleJob) ([]MetricSeries, error) {
	cm, err := c.cs.CoreV1().ConfigMaps(job.Namespace).Get(ctx, opprogress.HistoryConfigMapName(job.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the metric history of PaddleJob %s/%s: %w", job.Namespace, job.Name, err)
	case !opprogress.IsHistoryOf(cm, job.Name, job.UID):
		return nil, nil
	}
	h, err := opprogress.DecodeHistory(cm)
	if err != nil {
		return nil, err
	}
	return metricSeries(h), nil
}

// metricSeries types the history as the operator writes it: each point a
// pair of unix seconds (to the millisecond) and value, the steps aside.
func metricSeries(h opprogress.History) []MetricSeries {
	out := make([]MetricSeries, 0, len(h.Metrics))
	for _, s := range h.Metrics {
		ms := MetricSeries{Name: s.Name, Points: make([]MetricPoint, len(s.Points))}
		for i, p := range s.Points {
			ms.Points[i] = MetricPoint{Time: time.UnixMilli(int64(math.Round(p[0] * 1000))).UTC(), Value: p[1]}
			if i < len(s.Steps) {
				ms.Points[i].Step = s.Steps[i]
			}
		}
		out = append(out, ms)
	}
	return out
}
