package controller

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The operator's Prometheus metrics, served with controller-runtime's own
// (reconcile counts, errors and durations, workqueue depth, client requests)
// on the manager's metrics endpoint.
var (
	jobDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "paddlejob_job_duration_seconds",
		Help:    "Time from a PaddleJob's start to its completion or failure.",
		Buckets: prometheus.ExponentialBuckets(10, 2, 14), // 10 s to ~23 h
	}, []string{"phase"})
	jobStartup = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "paddlejob_job_startup_seconds",
		Help:    "Time from a PaddleJob's creation to all its pods running.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14), // 0.5 s to ~68 min
	})
	podRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paddlejob_pod_restarts_total",
		Help: "Failed pods the operator recreated under their role's restart policy.",
	}, []string{"role"})
	jobRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paddlejob_job_restarts_total",
		Help: "Restarts of a whole PaddleJob (every pod recreated), by reason: PodFailed, ProgressDeadlineExceeded.",
	}, []string{"reason"})
	jobsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paddlejob_jobs_finished_total",
		Help: "PaddleJobs that reached a terminal phase, by phase and reason.",
	}, []string{"phase", "reason"})
)

func init() {
	metrics.Registry.MustRegister(jobDuration, jobStartup, podRestarts, jobRestarts, jobsFinished, jobsByPhase{})
}

// gaugeReader is where jobsByPhase reads the jobs: the running manager's
// cache.
var gaugeReader atomic.Pointer[client.Reader]

// jobsByPhase counts the PaddleJobs of the cache by phase when scraped, so
// the gauge is right after an operator restart and costs nothing between
// scrapes.
type jobsByPhase struct{}

var jobsDesc = prometheus.NewDesc("paddlejob_jobs", "PaddleJobs by phase and mode.", []string{"phase", "mode"}, nil)

func (j jobsByPhase) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

func (j jobsByPhase) Collect(ch chan<- prometheus.Metric) {
	reader := gaugeReader.Load()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list paddlev1.PaddleJobList
	if err := (*reader).List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
		return
	}
	type key struct{ phase, mode string }
	counts := map[key]int{}
	for i := range list.Items {
		st := list.Items[i].Status
		phase := string(st.Phase)
		if phase == "" {
			phase = string(paddlev1.PaddleJobPending)
		}
		counts[key{phase, string(list.Items[i].Spec.Mode())}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), k.phase, k.mode)
	}
}

// ReadJobGaugeFrom makes the jobs-by-phase gauge count the jobs of reader
// (the manager's cache).
func ReadJobGaugeFrom(reader client.Reader) { gaugeReader.Store(&reader) }

// observeTransition records the metrics of a job's phase change.
func observeTransition(old, updated *paddlev1.PaddleJob) {
	st := &updated.Status
	switch {
	case st.Phase == paddlev1.PaddleJobRunning && old.Status.Phase != paddlev1.PaddleJobRunning && !old.Status.IsConditionTrue(paddlev1.JobRunning):
		jobStartup.Observe(time.Since(updated.CreationTimestamp.Time).Seconds())
	case st.IsFinished() && !old.Status.IsFinished():
		reason := ""
		for _, c := range st.Conditions {
			if (c.Type == paddlev1.JobFailed || c.Type == paddlev1.JobSucceeded) && c.Status == "True" {
				reason = c.Reason
			}
		}
		jobsFinished.WithLabelValues(string(st.Phase), reason).Inc()
		if st.StartTime != nil && st.CompletionTime != nil {
			jobDuration.WithLabelValues(string(st.Phase)).Observe(st.CompletionTime.Sub(st.StartTime.Time).Seconds())
		}
	}
}
