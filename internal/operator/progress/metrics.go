package progress

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The progress metrics, served on the operator's metrics endpoint. They
// mirror the store: one series per job that reported in the last TTL (at
// most MaxJobs), and per metric of it (at most 16 a job).
var (
	reportsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paddlejob_progress_reports_total",
		Help: "Progress reports received from training programs, by result (accepted, unauthenticated, forbidden, invalid, too_large, rate_limited, ...).",
	}, []string{"result"})
	percentDesc = prometheus.NewDesc("paddlejob_job_progress_percent",
		"Percent of a PaddleJob's training done, as its training program last reported it.", []string{"namespace", "paddlejob"}, nil)
	metricDesc = prometheus.NewDesc("paddlejob_job_metric",
		"Latest value of a metric a PaddleJob's training program reported (loss, auc...).", []string{"namespace", "paddlejob", "metric"}, nil)
)

func init() {
	metrics.Registry.MustRegister(reportsTotal, collector{})
}

// collected is the store the gauges read: the running manager's.
var collected atomic.Pointer[Store]

// CollectFrom makes the progress gauges mirror store.
func CollectFrom(store *Store) { collected.Store(store) }

// collector exports the store's latest progress when scraped.
type collector struct{}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- percentDesc
	ch <- metricDesc
}

func (collector) Collect(ch chan<- prometheus.Metric) {
	store := collected.Load()
	if store == nil {
		return
	}
	for _, s := range store.snapshots() {
		if s.percent != nil {
			ch <- prometheus.MustNewConstMetric(percentDesc, prometheus.GaugeValue, *s.percent, s.job.Namespace, s.job.Name)
		}
		for _, m := range s.metrics {
			ch <- prometheus.MustNewConstMetric(metricDesc, prometheus.GaugeValue, m.Value, s.job.Namespace, s.job.Name, m.Name)
		}
	}
}
