package dashboard

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	opprogress "github.com/paddlejob/paddlejob/internal/operator/progress"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The job page: one stream per open page, from the watches of the job and
// its pods (the SDK's Watch), of the job's events, and of its metric
// history ConfigMap. Each part is sent when it changed: a pod starting
// does not resend the curves.

// maxEvents bounds the events a job page shows, the latest kept.
const maxEvents = 200

// JobView is the job page's "job" event: the job, its conditions as a
// timeline, its pods and its restarts.
type JobView struct {
	// Exists is false while the job does not exist (yet, or any more).
	Exists bool   `json:"exists"`
	Row    JobRow `json:"row"`
	UID    string `json:"uid,omitempty"`
	// Progress is the latest report in full: every metric, the step and
	// which pod reported.
	Progress        *paddlev1.JobProgress `json:"progress,omitempty"`
	StartTime       *time.Time            `json:"startTime,omitempty"`
	CompletionTime  *time.Time            `json:"completionTime,omitempty"`
	LastRestartTime *time.Time            `json:"lastRestartTime,omitempty"`
	RestartCount    int32                 `json:"restartCount"`
	Spec            SpecSummary           `json:"spec"`
	// Elastic is the scale control's range, for an elastic job only.
	Elastic *ElasticView `json:"elastic,omitempty"`
	// Conditions are ordered by the time of their last transition.
	Conditions []Condition `json:"conditions"`
	Pods       []PodRow    `json:"pods"`
	// Restarts are when the job was restarted, oldest first, to mark on the
	// curves.
	Restarts []time.Time `json:"restarts"`
	// Timeline is every transition of its conditions and every restart,
	// oldest first (timeline.go); Suspensions are when it was suspended.
	Timeline    []TimelineEntry `json:"timeline"`
	Suspensions []Interval      `json:"suspensions"`
	// Failure is the job's latest failure when the operator explained it,
	// or when one of its pods failed (failure.go).
	Failure *FailureView `json:"failure,omitempty"`
}

// SpecSummary is what the job asked for, in brief.
type SpecSummary struct {
	Intranet       string     `json:"intranet"`
	CleanPodPolicy string     `json:"cleanPodPolicy"`
	RestartScope   string     `json:"restartScope"`
	BackoffLimit   int32      `json:"backoffLimit"`
	Suspend        bool       `json:"suspend"`
	Roles          []RoleSpec `json:"roles"`
}

// RoleSpec is one role of the spec.
type RoleSpec struct {
	Role          string `json:"role"`
	Replicas      int32  `json:"replicas"`
	Image         string `json:"image"`
	RestartPolicy string `json:"restartPolicy"`
}

// Condition is one of the job's conditions.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// PodRow is one pod of the job.
type PodRow struct {
	Name  string `json:"name"`
	Role  string `json:"role"`
	Index int    `json:"index"`
	// State is the pod's state in a word, as kubectl get pods shows it.
	State string `json:"state"`
	// Reason and Message say why a container waits or ended (its last
	// state's, for one that restarted; of a terminated container's message,
	// the line that says what failed); ExitCode is a terminated
	// container's.
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Known is the id of the known failure its failed container met
	// (docs/paddle-known-issues.md), "" for none.
	Known          string    `json:"known,omitempty"`
	Restarts       int32     `json:"restarts"`
	Node           string    `json:"node,omitempty"`
	IP             string    `json:"ip,omitempty"`
	Created        time.Time `json:"created"`
	Containers     []string  `json:"containers"`
	InitContainers []string  `json:"initContainers"`
}

// EventRow is one event of the job or of one of its pods.
type EventRow struct {
	// Object is the pod's name for a pod's event, "" for the job's.
	Object  string    `json:"object,omitempty"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count"`
	Time    time.Time `json:"time"`
}

// viewOf is the job page's view of a snapshot and the job's events.
func viewOf(s client.Snapshot, events []corev1.Event) JobView {
	v := JobView{Conditions: []Condition{}, Pods: []PodRow{}, Restarts: []time.Time{}, Timeline: []TimelineEntry{}, Suspensions: []Interval{}}
	j := s.Job
	if j == nil {
		return v
	}
	v.Exists, v.Row, v.UID = true, rowOf(j), string(j.UID)
	st := &j.Status
	v.Progress, v.RestartCount = st.Progress, st.RestartCount
	if st.StartTime != nil {
		v.StartTime = &st.StartTime.Time
	}
	if st.CompletionTime != nil {
		v.CompletionTime = &st.CompletionTime.Time
	}
	if st.LastRestartTime != nil {
		v.LastRestartTime = &st.LastRestartTime.Time
	}
	spec := &j.Defaulted().Spec // what the operator acts on
	v.Spec = SpecSummary{
		Intranet:       string(spec.Intranet),
		CleanPodPolicy: string(spec.EffectiveCleanPodPolicy()),
		RestartScope:   string(spec.RestartScope),
		BackoffLimit:   *spec.BackoffLimit,
		Suspend:        j.Spec.IsSuspended(),
		Roles:          []RoleSpec{},
	}
	v.Elastic = elasticOf(&j.Spec)
	for _, rt := range paddlev1.ReplicaTypes {
		rs := spec.Replicas(rt)
		if rs == nil {
			continue
		}
		var images []string
		for _, c := range rs.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		v.Spec.Roles = append(v.Spec.Roles, RoleSpec{Role: string(rt), Replicas: rs.Replicas,
			Image: strings.Join(images, ", "), RestartPolicy: string(rs.RestartPolicy)})
	}
	for _, c := range st.Conditions {
		v.Conditions = append(v.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Time: c.LastTransitionTime.Time})
	}
	slices.SortStableFunc(v.Conditions, func(a, b Condition) int { return a.Time.Compare(b.Time) })
	for i := range s.Pods {
		v.Pods = append(v.Pods, podRowOf(&s.Pods[i]))
	}
	v.Restarts = restartTimes(j, events)
	v.Timeline = timelineOf(j, events)
	v.Suspensions = suspensionsOf(v.Timeline)
	v.Failure = failureOf(j, s.Pods)
	return v
}

func eventRowsOf(events []corev1.Event) []EventRow {
	slices.SortStableFunc(events, func(a, b corev1.Event) int { return client.EventTime(a).Compare(client.EventTime(b)) })
	if len(events) > maxEvents {
		events = events[len(events)-maxEvents:]
	}
	out := make([]EventRow, 0, len(events))
	for _, e := range events {
		n := e.Count
		if e.Series != nil && e.Series.Count > n {
			n = e.Series.Count
		}
		obj := ""
		if e.InvolvedObject.Kind == "Pod" {
			obj = e.InvolvedObject.Name
		}
		out = append(out, EventRow{Object: obj, Type: e.Type, Reason: e.Reason, Message: e.Message, Count: max(n, 1), Time: client.EventTime(e)})
	}
	return out
}

// jobWatch gathers what one job page shows.
type jobWatch struct {
	namespace, name string

	mu       sync.Mutex
	snap     client.Snapshot
	haveSnap bool
	dirty    map[string]bool // "job", "events", "history"
	problems map[string]string
	changed  chan struct{}

	events, podEvents, configMaps *follower
}

func (w *jobWatch) mark(part string) {
	w.mu.Lock()
	w.dirty[part] = true
	w.mu.Unlock()
	signal(w.changed)
}

func (w *jobWatch) setProblem(source string, err error) {
	msg := ""
	if err != nil {
		msg = fmt.Sprintf("reading the %s: %v", source, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.problems[source] == msg {
		return
	}
	if msg == "" {
		delete(w.problems, source)
	} else {
		w.problems[source] = msg
	}
	w.dirty["problem"] = true
	signal(w.changed)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// podEvents are the events of the job's pods, by their names (a pod's
// events outlive it: a suspended job's pods are gone, not their events).
func (w *jobWatch) jobPodEvents() []corev1.Event {
	var out []corev1.Event
	for _, o := range w.podEvents.list() {
		e := o.(*corev1.Event)
		if e.InvolvedObject.Kind == "Pod" && podOfJob(e.InvolvedObject.Name, w.name) {
			out = append(out, *e)
		}
	}
	return out
}

// podOfJob reports whether pod is named as a pod of job: <job>-<role>-<index>.
func podOfJob(pod, job string) bool {
	rest, ok := strings.CutPrefix(pod, job+"-")
	if !ok {
		return false
	}
	for _, rt := range paddlev1.ReplicaTypes {
		if i, ok := strings.CutPrefix(rest, string(rt)+"-"); ok {
			_, err := strconv.Atoi(i)
			return err == nil
		}
	}
	return false
}

// jobEvents are the job's events: of this job, not of an earlier one of the
// same name.
func (w *jobWatch) jobEvents(uid string) []corev1.Event {
	var out []corev1.Event
	for _, o := range w.events.list() {
		e := o.(*corev1.Event)
		if e.InvolvedObject.Kind != "PaddleJob" || e.InvolvedObject.Name != w.name || uid != "" && string(e.InvolvedObject.UID) != uid {
			continue
		}
		out = append(out, *e)
	}
	return out
}

// history is the job's metric history; empty until the operator writes one.
func (w *jobWatch) history(uid string) (opprogress.History, error) {
	for _, o := range w.configMaps.list() {
		cm := o.(*corev1.ConfigMap)
		if cm.Name != opprogress.HistoryConfigMapName(w.name) || !ownedByUID(cm.OwnerReferences, uid) {
			continue
		}
		return opprogress.DecodeHistory(cm)
	}
	return opprogress.History{}, nil
}

func ownedByUID(refs []metav1.OwnerReference, uid string) bool {
	if uid == "" || len(refs) == 0 {
		return true
	}
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return string(r.UID) == uid })
}

// serveJobStream streams a job's page.
func (s *Server) serveJobStream(rw http.ResponseWriter, r *http.Request) {
	ns, name, ok := jobPath(rw, r)
	if !ok {
		return
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	w := s.watchJob(ctx, ns, name)

	stream, err := startSSE(rw)
	if err != nil {
		return
	}
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	sentHistory, sentEvents := false, false
	for {
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			if stream.ping() != nil {
				return
			}
			continue
		case <-w.changed:
		}
		// Gather what changes together.
		select {
		case <-ctx.Done():
			return
		case <-time.After(batchInterval):
		}
		frames, haveSnap := w.frames(&sentEvents, &sentHistory)
		for _, f := range frames {
			if stream.write(f) != nil {
				return
			}
		}
		if !haveSnap || !w.events.synced() || !w.podEvents.synced() || !w.configMaps.synced() {
			// Not everything listed yet: look again shortly.
			w.mark("job")
		}
	}
}

// watchJob starts following a job, its pods, its events and its metric
// history until ctx ends; w.changed says when something changed.
func (s *Server) watchJob(ctx context.Context, ns, name string) *jobWatch {
	w := &jobWatch{namespace: ns, name: name, dirty: map[string]bool{}, problems: map[string]string{}, changed: make(chan struct{}, 1)}
	// The SDK's watch waits for its first list: ask once first, so that a
	// job or pods the user may not read are said at once.
	if _, err := s.client.Get(ctx, ns, name); err != nil && !notFound(err) {
		w.setProblem("PaddleJob", err)
	}
	if _, err := s.client.Pods(ctx, ns, name); err != nil {
		w.setProblem("pods", err)
	}
	cs := s.client.Clientset().CoreV1()
	w.events = follow(ctx, listWatch(fields.Set{"involvedObject.kind": "PaddleJob", "involvedObject.name": name}.String(),
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.Events(ns).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.Events(ns).Watch(ctx, o)
		}),
		&corev1.Event{}, followHandlers{
			changed: func(any, bool) { w.setProblem("events", nil); w.mark("events"); w.mark("job") },
			failed:  func(err error) { w.setProblem("events", err) },
		})
	w.podEvents = follow(ctx, listWatch(fields.OneTermEqualSelector("involvedObject.kind", "Pod").String(),
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.Events(ns).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.Events(ns).Watch(ctx, o)
		}),
		&corev1.Event{}, followHandlers{
			changed: func(any, bool) { w.setProblem("pods' events", nil); w.mark("events") },
			failed:  func(err error) { w.setProblem("pods' events", err) },
		})
	w.configMaps = follow(ctx, listWatch(fields.OneTermEqualSelector("metadata.name", opprogress.HistoryConfigMapName(name)).String(),
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.ConfigMaps(ns).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.ConfigMaps(ns).Watch(ctx, o)
		}),
		&corev1.ConfigMap{}, followHandlers{
			changed: func(any, bool) { w.setProblem("metric history", nil); w.mark("history") },
			failed:  func(err error) { w.setProblem("metric history", err) },
		})
	go func() {
		_ = s.client.Watch(ctx, ns, name, func(snap client.Snapshot) (bool, error) {
			w.mu.Lock()
			uidChanged := w.haveSnap && uidOf(w.snap.Job) != uidOf(snap.Job)
			w.snap, w.haveSnap = snap, true
			w.mu.Unlock()
			// Listed: whatever kept the job or its pods from being read passed.
			w.setProblem("PaddleJob", nil)
			w.setProblem("pods", nil)
			w.mark("job")
			if uidChanged {
				// Another job of the same name: its own events and curves.
				w.mark("events")
				w.mark("history")
			}
			return false, nil
		})
	}()
	return w
}

// frames are the stream's frames of what changed since the last ones (the
// events and the history are sent once at least, when listed), and whether
// the job was listed yet.
func (w *jobWatch) frames(sentEvents, sentHistory *bool) ([][]byte, bool) {
	w.mu.Lock()
	dirty := maps.Clone(w.dirty)
	clear(w.dirty)
	snap, haveSnap := w.snap, w.haveSnap
	problems := slices.Sorted(maps.Values(w.problems))
	w.mu.Unlock()
	uid := uidOf(snap.Job)
	var frames [][]byte
	if dirty["problem"] {
		f, _ := frame("problem", Problem{Message: strings.Join(problems, "; ")})
		frames = append(frames, f)
	}
	if dirty["job"] && haveSnap && w.events.synced() {
		f, _ := frame("job", viewOf(snap, w.jobEvents(uid)))
		frames = append(frames, f)
	}
	if (dirty["events"] || !*sentEvents) && haveSnap && w.events.synced() && w.podEvents.synced() {
		f, _ := frame("events", eventRowsOf(append(w.jobEvents(uid), w.jobPodEvents()...)))
		frames, *sentEvents = append(frames, f), true
	}
	if (dirty["history"] || !*sentHistory) && haveSnap && w.configMaps.synced() {
		hist, err := w.history(uid)
		if err != nil {
			w.setProblem("metric history", err)
		} else {
			f, _ := frame("history", hist)
			frames, *sentHistory = append(frames, f), true
		}
	}
	return frames, haveSnap
}

func uidOf(j *paddlev1.PaddleJob) string {
	if j == nil {
		return ""
	}
	return string(j.UID)
}
