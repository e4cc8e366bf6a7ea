package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The jobs page. One informer per namespace shown (or one for all of
// them) serves every browser showing it: each gets every row once, then
// batches of the rows that changed. The page holds the rows and sorts,
// filters and pages them itself; the server never sends a row that did not
// change, so a thousand quiet jobs cost nothing after the first message.

// idleHubTimeout is how long a namespace's informer outlives its last
// browser, so a reload or a back-and-forth between pages reuses it.
const idleHubTimeout = time.Minute

// subscriberBuffer is how many messages a browser may be behind before it
// is disconnected (it reconnects and starts from a fresh snapshot).
const subscriberBuffer = 64

// JobsSnapshot is the jobs stream's first event: every row, by namespace
// and name.
type JobsSnapshot struct {
	Namespace string            `json:"namespace"`
	Rows      []json.RawMessage `json:"rows"`
}

// JobsChanges is a batch of changed rows: rows new or changed, and the
// "namespace/name" of jobs deleted.
type JobsChanges struct {
	Upserts []json.RawMessage `json:"upserts"`
	Deletes []string          `json:"deletes"`
}

type jobsHub struct {
	namespace string
	follower  *follower
	stop      context.CancelFunc

	mu      sync.Mutex
	rows    map[string][]byte // encoded JobRows by namespace/name
	pending map[string][]byte // changed since the last batch; nil: deleted
	subs    map[*subscriber]bool
	synced  bool
	problem string
	idle    *time.Timer
	// stopped is set when the hub stops for want of browsers; a browser
	// arriving then gets a new hub.
	stopped bool
}

type subscriber struct {
	frames chan []byte
	// snapshot is set once the subscriber got its snapshot: batches go
	// only to those.
	snapshot bool
}

// subscribe adds a browser to the hub of a namespace.
func (s *Server) subscribe(namespace string) (*jobsHub, *subscriber) {
	for {
		h := s.hub(namespace)
		if sub := h.subscribe(); sub != nil {
			return h, sub
		}
	}
}

// hub returns the running hub of a namespace, starting it when none runs.
func (s *Server) hub(namespace string) *jobsHub {
	s.hubsMu.Lock()
	defer s.hubsMu.Unlock()
	if h := s.hubs[namespace]; h != nil && !h.isStopped() {
		return h
	}
	ctx, cancel := context.WithCancel(s.ctx)
	h := &jobsHub{namespace: namespace, stop: cancel, rows: map[string][]byte{}, pending: map[string][]byte{}, subs: map[*subscriber]bool{}}
	h.follower = follow(ctx, s.client.JobsListWatch(namespace), &paddlev1.PaddleJob{}, followHandlers{changed: h.changed, failed: h.failed})
	s.hubs[namespace] = h
	go h.run(ctx, func() {
		s.hubsMu.Lock()
		defer s.hubsMu.Unlock()
		if s.hubs[namespace] == h {
			delete(s.hubs, namespace)
		}
	})
	return h
}

func (h *jobsHub) changed(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	job, ok := obj.(*paddlev1.PaddleJob)
	if !ok {
		return
	}
	key := job.Namespace + "/" + job.Name
	h.mu.Lock()
	defer h.mu.Unlock()
	h.problem = ""
	if deleted {
		if _, ok := h.rows[key]; ok {
			delete(h.rows, key)
			h.pending[key] = nil
		}
		return
	}
	row, err := json.Marshal(rowOf(job))
	if err != nil {
		return
	}
	if !bytes.Equal(h.rows[key], row) {
		h.rows[key] = row
		h.pending[key] = row
	}
}

func (h *jobsHub) failed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Before the first list, or when it will not pass by itself: a
	// dropped watch that the informer resumes is no news to the user.
	if !h.synced || lasting(err) {
		h.problem = "reading the PaddleJobs: " + err.Error()
	}
}

// run sends the batches until the hub is stopped or idle, then calls done.
func (h *jobsHub) run(ctx context.Context, done func()) {
	defer done()
	tick := time.NewTicker(batchInterval)
	defer tick.Stop()
	sentProblem := ""
	for {
		select {
		case <-ctx.Done():
			h.mu.Lock()
			h.stopped = true
			for sub := range h.subs {
				close(sub.frames)
				delete(h.subs, sub)
			}
			h.mu.Unlock()
			return
		case <-tick.C:
		}
		h.mu.Lock()
		if !h.synced && h.follower.synced() {
			// Everything listed so far is in the snapshots.
			h.synced, h.problem = true, ""
			clear(h.pending)
		}
		if h.synced {
			for sub, got := range h.subs {
				if !got {
					h.deliver(sub, h.snapshotLocked())
				}
			}
		}
		if len(h.pending) > 0 && h.synced {
			f := h.changesLocked()
			for sub, got := range h.subs {
				if got {
					h.deliver(sub, f)
				}
			}
		}
		if h.problem != sentProblem {
			sentProblem = h.problem
			f, _ := frame("problem", Problem{Message: h.problem})
			for sub := range h.subs {
				h.deliver(sub, f)
			}
		}
		h.mu.Unlock()
	}
}

// deliver queues a frame for a subscriber, or drops a subscriber too far
// behind: its browser reconnects and starts again from a snapshot.
func (h *jobsHub) deliver(sub *subscriber, f []byte) {
	select {
	case sub.frames <- f:
		h.subs[sub] = h.subs[sub] || bytes.HasPrefix(f, []byte("event: snapshot"))
	default:
		close(sub.frames)
		delete(h.subs, sub)
	}
}

func (h *jobsHub) snapshotLocked() []byte {
	keys := make([]string, 0, len(h.rows))
	for k := range h.rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// A JobsSnapshot, written out: the rows are JSON already, and
	// encoding/json would check and copy them all again.
	ns, _ := json.Marshal(h.namespace)
	var b bytes.Buffer
	if len(keys) > 0 {
		b.Grow(len(keys)*(len(h.rows[keys[0]])+1) + 64)
	}
	b.WriteString(`{"namespace":`)
	b.Write(ns)
	b.WriteString(`,"rows":[`)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(h.rows[k])
	}
	b.WriteString("]}")
	return rawFrame("snapshot", b.Bytes())
}

func (h *jobsHub) changesLocked() []byte {
	ch := JobsChanges{Upserts: []json.RawMessage{}, Deletes: []string{}}
	for k, row := range h.pending {
		if row == nil {
			ch.Deletes = append(ch.Deletes, k)
		} else {
			ch.Upserts = append(ch.Upserts, row)
		}
	}
	clear(h.pending)
	f, _ := frame("changes", ch)
	return f
}

func (h *jobsHub) isStopped() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped
}

// subscribe adds a browser; its snapshot comes with the next tick once the
// jobs are listed. It returns nil when the hub stopped.
func (h *jobsHub) subscribe() *subscriber {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil
	}
	if h.idle != nil {
		h.idle.Stop()
		h.idle = nil
	}
	sub := &subscriber{frames: make(chan []byte, subscriberBuffer)}
	h.subs[sub] = false
	if h.problem != "" {
		// The others were told already.
		f, _ := frame("problem", Problem{Message: h.problem})
		h.deliver(sub, f)
	}
	return sub
}

func (h *jobsHub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[sub]; ok {
		delete(h.subs, sub)
		close(sub.frames)
	}
	if len(h.subs) == 0 && h.idle == nil {
		h.idle = time.AfterFunc(idleHubTimeout, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.subs) == 0 && !h.stopped {
				h.stopped = true
				h.stop()
			}
		})
	}
}

// serveJobsStream streams the rows of the jobs of ?namespace= ("" for every
// namespace).
func (s *Server) serveJobsStream(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	if ns != "" {
		if err := validName("namespace", ns); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	h, sub := s.subscribe(ns)
	defer h.unsubscribe(sub)
	stream, err := startSSE(w)
	if err != nil {
		return
	}
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	ctx, cancel := s.streamContext(r)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case f, ok := <-sub.frames:
			if !ok {
				return // too far behind, or the server stops: the browser reconnects
			}
			if stream.write(f) != nil {
				return
			}
		case <-ping.C:
			if stream.ping() != nil {
				return
			}
		}
	}
}
