package progress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/truncate"
)

// maxCount bounds epoch, step and the remaining seconds a report may give.
const maxCount = 1 << 40

var metricName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./-]{0,63}$`)

// Report is one progress report of a training program, as it POSTs it:
//
//	{"percent": 40, "epoch": 2, "totalEpochs": 5, "step": 1200,
//	 "etaSeconds": 95, "metrics": {"auc": 0.7312, "loss": 0.482}}
//
// Every field is optional; a report with none is refused.
type Report struct {
	Percent     *float64 `json:"percent,omitempty"`
	Epoch       *int64   `json:"epoch,omitempty"`
	TotalEpochs *int64   `json:"totalEpochs,omitempty"`
	Step        *int64   `json:"step,omitempty"`
	ETASeconds  *int64   `json:"etaSeconds,omitempty"`
	Metrics     Metrics  `json:"metrics,omitempty"`
}

// Metric is a named value.
type Metric struct {
	Name  string
	Value float64
}

// Metrics are named values in the order the report names them (a JSON
// object, whose order encoding/json would lose).
type Metrics []Metric

// UnmarshalJSON reads a JSON object of numbers, keeping its order.
func (m *Metrics) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*m = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("metrics: want an object of names to numbers")
	}
	var out Metrics
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := k.(string)
		v, err := dec.Token()
		if err != nil {
			return err
		}
		num, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("metrics.%s: want a number, got %v", name, v)
		}
		f, err := num.Float64()
		if err != nil {
			return fmt.Errorf("metrics.%s: %w", name, err)
		}
		out = append(out, Metric{Name: name, Value: f})
	}
	*m = out
	return nil
}

// MarshalJSON writes the metrics as a JSON object, in order.
func (m Metrics) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(x.Name)
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(x.Value, 'g', -1, 64))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodeReport reads and validates a report; its errors name the field.
func DecodeReport(r io.Reader) (Report, error) {
	var rep Report
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return Report{}, fmt.Errorf("decoding the report: %w", err)
	}
	if dec.More() {
		return Report{}, errors.New("decoding the report: data after the JSON object")
	}
	return rep, rep.Validate()
}

// Validate checks the report's fields against the bounds of docs/progress.md.
func (r Report) Validate() error {
	var errs []error
	if r.Percent == nil && r.Epoch == nil && r.Step == nil && r.ETASeconds == nil && len(r.Metrics) == 0 {
		errs = append(errs, errors.New("the report is empty: give percent, epoch, step, etaSeconds or metrics"))
	}
	if p := r.Percent; p != nil && (math.IsNaN(*p) || *p < 0 || *p > 100) {
		errs = append(errs, fmt.Errorf("percent: %v is not within 0-100", *p))
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"epoch", r.Epoch}, {"totalEpochs", r.TotalEpochs}, {"step", r.Step}, {"etaSeconds", r.ETASeconds}} {
		if f.v != nil && (*f.v < 0 || *f.v > maxCount) {
			errs = append(errs, fmt.Errorf("%s: %d is not within 0-%d", f.name, *f.v, int64(maxCount)))
		}
	}
	if len(r.Metrics) > paddlev1.MaxProgressMetrics {
		errs = append(errs, fmt.Errorf("metrics: %d metrics, at most %d", len(r.Metrics), paddlev1.MaxProgressMetrics))
	}
	seen := map[string]bool{}
	for _, m := range r.Metrics {
		switch {
		case !metricName.MatchString(m.Name):
			errs = append(errs, fmt.Errorf("metrics: name %q: want a letter or '_', then letters, digits, '_', '.', '-' or '/', at most 64 characters", truncate.String(m.Name, 80)))
		case seen[m.Name]:
			errs = append(errs, fmt.Errorf("metrics.%s: named twice", m.Name))
		case math.IsNaN(m.Value) || math.IsInf(m.Value, 0):
			errs = append(errs, fmt.Errorf("metrics.%s: %v is not a finite number", m.Name, m.Value))
		}
		seen[m.Name] = true
	}
	return errors.Join(errs...)
}

// FormatValue is a metric value as the status shows it: the shortest
// representation with at most 6 significant digits.
func FormatValue(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// toStatus is the status form of a report received at when, with an ETA
// from the report else eta (negative: none).
func (r Report) toStatus(pod string, when time.Time, eta time.Duration) *paddlev1.JobProgress {
	p := &paddlev1.JobProgress{
		Epoch: r.Epoch, TotalEpochs: r.TotalEpochs, Step: r.Step,
		Reporter: pod, LastUpdateTime: ptr.To(metav1.NewTime(when.Truncate(time.Second))),
	}
	if r.Percent != nil {
		p.Percent = ptr.To(int32(math.Floor(*r.Percent)))
	}
	switch {
	case r.ETASeconds != nil:
		p.EstimatedSecondsRemaining = ptr.To(*r.ETASeconds)
	case eta >= 0:
		p.EstimatedSecondsRemaining = ptr.To(int64(eta.Round(time.Second).Seconds()))
	}
	for _, m := range r.Metrics {
		p.Metrics = append(p.Metrics, paddlev1.ProgressMetric{Name: m.Name, Value: FormatValue(m.Value)})
	}
	return p
}
