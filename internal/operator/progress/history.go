package progress

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The metric history of a job is kept in a ConfigMap of its own, written by
// the operator at most every HistoryFlush (30 s) while reports come, and
// read by `paddlejob metrics` with the reader's own RBAC (get configmaps).
// It is not in the job's status, so the curves cost the API server one
// small write a job every HistoryFlush, not one a report, and no watcher of
// PaddleJobs receives them.
const (
	// HistoryKey is the ConfigMap's key holding the History as JSON.
	HistoryKey = "history.json"
	// LabelHistoryOf names the job whose history a ConfigMap is. It is not
	// LabelJobName, so the controller's caches leave the ConfigMap out.
	LabelHistoryOf = "batch.paddlepaddle.org/metrics-of"
	fieldOwner     = "paddlejob-progress"
)

// The history is written with server-side apply.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=patch

// HistoryConfigMapName is the ConfigMap of a job's metric history.
func HistoryConfigMapName(job string) string { return job + "-metrics" }

// History is every metric's recorded curve, in the order first reported.
type History struct {
	Metrics []Series `json:"metrics"`
}

// Series is one metric's curve: [unix seconds, value] pairs, oldest first.
// Steps, when the program reported steps, holds the training step of each
// point (null where none was reported yet); a separate list, so readers of
// the pairs are unchanged.
type Series struct {
	Name   string       `json:"name"`
	Points [][2]float64 `json:"points"`
	Steps  []*int64     `json:"steps,omitempty"`
}

// DecodeHistory reads a history ConfigMap.
func DecodeHistory(cm *corev1.ConfigMap) (History, error) {
	var h History
	raw, ok := cm.Data[HistoryKey]
	if !ok {
		return h, fmt.Errorf("ConfigMap %s/%s has no %s", cm.Namespace, cm.Name, HistoryKey)
	}
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return h, fmt.Errorf("ConfigMap %s/%s: %s: %w", cm.Namespace, cm.Name, HistoryKey, err)
	}
	return h, nil
}

// HistoryWriter writes the jobs' histories as they become due. It runs on
// the leader, which receives the reports.
type HistoryWriter struct {
	Store  *Store
	Client client.Client
}

// NeedLeaderElection: only the leader's store holds reports.
func (h *HistoryWriter) NeedLeaderElection() bool { return true }

// Start writes the due histories every few seconds until ctx is done.
func (h *HistoryWriter) Start(ctx context.Context) error {
	tick := time.NewTicker(min(5*time.Second, h.Store.opts.HistoryFlush))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			h.flush(ctx)
		}
	}
}

func (h *HistoryWriter) flush(ctx context.Context) {
	for job, hc := range h.Store.historyDue(h.Store.now()) {
		if err := h.write(ctx, job, hc); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				h.Store.Forget(job)
				continue
			}
			log.FromContext(ctx).Error(err, "writing the metric history", "paddlejob", job)
			h.Store.markDirty(job)
		}
	}
}

func (h *HistoryWriter) write(ctx context.Context, job types.NamespacedName, hc historyCopy) error {
	hist := historyOf(hc)
	data, err := json.Marshal(hist)
	if err != nil {
		return err
	}
	cm := corev1ac.ConfigMap(HistoryConfigMapName(job.Name), job.Namespace).
		WithLabels(map[string]string{LabelHistoryOf: job.Name}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(paddlev1.GroupVersion.String()).WithKind("PaddleJob").
			WithName(job.Name).WithUID(hc.uid)).
		WithData(map[string]string{HistoryKey: string(data)})
	return h.Client.Apply(ctx, cm, client.FieldOwner(fieldOwner), client.ForceOwnership)
}

// historyOf is the History a copy of the store's curves is written as.
func historyOf(hc historyCopy) History {
	var hist History
	for _, name := range hc.order {
		s := Series{Name: name}
		withSteps := false
		for _, p := range hc.series[name] {
			s.Points = append(s.Points, [2]float64{float64(p.Time.UnixMilli()) / 1000, p.Value})
			s.Steps = append(s.Steps, p.Step)
			withSteps = withSteps || p.Step != nil
		}
		if !withSteps {
			s.Steps = nil
		}
		hist.Metrics = append(hist.Metrics, s)
	}
	return hist
}
