package progress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The metric history of a job is kept in a ConfigMap of its own, written by
// the operator at most every HistoryFlush (1 s) while reports come, within
// the history share of the write budget, and at once when the job
// finishes; read by `paddlejob metrics` with the reader's own RBAC (get
// configmaps). It is not in the job's status, so no watcher of PaddleJobs
// receives the curves.
const (
	// HistoryKey is the ConfigMap's key holding the History as JSON.
	HistoryKey = "history.json"
	// LabelHistoryOf names the job whose history a ConfigMap is. It is not
	// LabelJobName, so the controller's caches leave the ConfigMap out.
	LabelHistoryOf = "batch.paddlepaddle.org/metrics-of"
	fieldOwner     = "paddlejob-progress"
)

// The history is created, then updated with the resourceVersion it was
// last written at (a precondition: nothing changed it since), never
// applied with force, so a ConfigMap of the same name the job does not own
// is never taken over (see write).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update

// ReasonHistoryNotWritten is the reason of the Warning event a job gets
// when a ConfigMap it does not own holds its history's name.
const ReasonHistoryNotWritten = "MetricHistoryNotWritten"

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
	Store *Store
	// Client writes the ConfigMaps.
	Client client.Client
	// Reader reads them straight from the API server: the manager's cache
	// holds no history ConfigMaps (they are not labelled as a job's).
	Reader client.Reader
	// Recorder, when set, gets a Warning event on a job whose history's
	// ConfigMap is another's.
	Recorder events.EventRecorder

	// written is the resourceVersion each job's ConfigMap was last written
	// at, for the job of that UID; refused the jobs whose history name is
	// another's ConfigMap, already told so. flush alone uses them.
	written map[types.NamespacedName]writtenAt
	refused map[types.NamespacedName]types.UID
}

type writtenAt struct {
	uid             types.UID
	resourceVersion string
}

// NeedLeaderElection: only the leader's store holds reports.
func (h *HistoryWriter) NeedLeaderElection() bool { return true }

// Start writes the due histories every historyTick until ctx is done.
func (h *HistoryWriter) Start(ctx context.Context) error {
	tick := time.NewTicker(historyTick)
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
	if h.written == nil {
		h.written, h.refused = map[types.NamespacedName]writtenAt{}, map[types.NamespacedName]types.UID{}
	}
	for job, hc := range h.Store.historyDue(h.Store.now()) {
		err := h.write(ctx, job, hc)
		var foreign *foreignConfigMapError
		switch {
		case err == nil:
			delete(h.refused, job)
		case errors.As(err, &foreign):
			// Not written, and not retried until a new report comes: the
			// ConfigMap is looked at again then, in case it was removed.
			if h.refused[job] != hc.uid {
				h.refused[job] = hc.uid
				log.FromContext(ctx).Info("not writing the metric history", "paddlejob", job, "reason", err.Error())
				if h.Recorder != nil {
					h.Recorder.Eventf(foreign.job, nil, corev1.EventTypeWarning, ReasonHistoryNotWritten, "WriteHistory", "%s", err.Error())
				}
			}
		case errors.Is(err, errPreviousJobsHistory):
			h.Store.markDirty(job) // the garbage collector removes it soon
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			h.Store.Forget(job)
		default:
			log.FromContext(ctx).Error(err, "writing the metric history", "paddlejob", job)
			h.Store.markDirty(job)
		}
	}
	// Forget what is kept of jobs the store forgot.
	for job, w := range h.written {
		if !h.Store.holds(job, w.uid) {
			delete(h.written, job)
		}
	}
	for job, uid := range h.refused {
		if !h.Store.holds(job, uid) {
			delete(h.refused, job)
		}
	}
}

// foreignConfigMapError says a ConfigMap the job does not own holds the
// name of its history.
type foreignConfigMapError struct {
	job *paddlev1.PaddleJob
	cm  types.NamespacedName
}

func (e *foreignConfigMapError) Error() string {
	return fmt.Sprintf("ConfigMap %s exists and is not PaddleJob %s's (no owner reference to it): the job's metric history is not recorded, and the ConfigMap is left as it is; "+
		"rename the job or that ConfigMap to record it (the job's status still shows the latest metrics)", e.cm, e.job.Name)
}

// errPreviousJobsHistory: the ConfigMap is the history of an earlier job
// of the same name, which the garbage collector is about to remove.
var errPreviousJobsHistory = errors.New("the ConfigMap is an earlier job's history")

// write writes a job's history into its ConfigMap, only if that ConfigMap
// is the job's: created by this writer, or carrying an owner reference to
// the job's UID (as those written by earlier operators do). Any other is
// left untouched: forcing our fields onto it would take it over, and its
// new owner reference would have the garbage collector delete it with the
// job. Each update is conditional on the resourceVersion the ConfigMap was
// last read or written at, so one that changed hands in between is seen.
func (h *HistoryWriter) write(ctx context.Context, job types.NamespacedName, hc historyCopy) error {
	data, err := json.Marshal(historyOf(hc))
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: job.Namespace, Name: HistoryConfigMapName(job.Name)}
	owner := metav1.OwnerReference{APIVersion: paddlev1.GroupVersion.String(), Kind: "PaddleJob", Name: job.Name, UID: hc.uid, Controller: ptr.To(true)}
	if w, ok := h.written[job]; ok && w.uid == hc.uid {
		// Ours as we last wrote it, unless the update says otherwise.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name, ResourceVersion: w.resourceVersion,
			Labels: map[string]string{LabelHistoryOf: job.Name}, OwnerReferences: []metav1.OwnerReference{owner},
		}, Data: map[string]string{HistoryKey: string(data)}}
		err := h.Client.Update(ctx, cm, client.FieldOwner(fieldOwner))
		if err == nil {
			h.written[job] = writtenAt{uid: hc.uid, resourceVersion: cm.ResourceVersion}
			return nil
		}
		delete(h.written, job)
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
		// Changed or removed by another: look at it afresh.
	}
	cm := &corev1.ConfigMap{}
	err = h.Reader.Get(ctx, key, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{LabelHistoryOf: job.Name}, OwnerReferences: []metav1.OwnerReference{owner},
		}, Data: map[string]string{HistoryKey: string(data)}}
		// Fails, and is retried, if another creates it first.
		if err := h.Client.Create(ctx, cm, client.FieldOwner(fieldOwner)); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		switch ownership(cm.OwnerReferences, job.Name, hc.uid) {
		case ownedByEarlierJob:
			return errPreviousJobsHistory
		case notOwned:
			return &foreignConfigMapError{cm: key, job: &paddlev1.PaddleJob{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name, UID: hc.uid}}}
		}
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[LabelHistoryOf] = job.Name
		cm.Data = map[string]string{HistoryKey: string(data)}
		if err := h.Client.Update(ctx, cm, client.FieldOwner(fieldOwner)); err != nil {
			return err
		}
	}
	h.written[job] = writtenAt{uid: hc.uid, resourceVersion: cm.ResourceVersion}
	return nil
}

// IsHistoryOf says whether cm is the metric history of the job of that
// name and UID, and not another's ConfigMap of the same name.
func IsHistoryOf(cm *corev1.ConfigMap, job string, uid types.UID) bool {
	return ownership(cm.OwnerReferences, job, uid) == ownedByJob
}

type owned int

const (
	notOwned owned = iota
	ownedByJob
	ownedByEarlierJob
)

// ownership says whose a ConfigMap of a job's history name is, by its
// owner references: the job's (its UID), an earlier job of that name's
// (the garbage collector deletes it once that job is gone), or another's.
func ownership(refs []metav1.OwnerReference, job string, uid types.UID) owned {
	result := notOwned
	for _, r := range refs {
		if r.APIVersion != paddlev1.GroupVersion.String() || r.Kind != "PaddleJob" || r.Name != job {
			continue
		}
		if r.UID == uid {
			return ownedByJob
		}
		result = ownedByEarlierJob
	}
	return result
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
