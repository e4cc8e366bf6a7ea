package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// expectationTimeout bounds how long a pass waits for the cache to show a
// create or delete it made. Informers deliver every event, so it only matters
// when an object came and went between two looks.
const expectationTimeout = 30 * time.Second

// expectations remember the pod creates and deletes a job's passes made until
// the cache shows them. Until then the cache is behind its own writes: a pass
// would recreate pods it just created (409s by the hundred for many jobs) and
// compute a status from pods it cannot see yet, only to write it back.
type expectations struct {
	mu   sync.Mutex
	jobs map[types.NamespacedName]*pending
}

type pending struct {
	uid     types.UID               // the job's: a job recreated under the same name starts afresh
	creates map[string]time.Time    // pod name → when created
	deletes map[types.UID]time.Time // pod UID → when deleted
}

func newExpectations() *expectations {
	return &expectations{jobs: map[types.NamespacedName]*pending{}}
}

func (e *expectations) entry(job jobRef) *pending {
	p, ok := e.jobs[job.key]
	if !ok || p.uid != job.uid {
		p = &pending{uid: job.uid, creates: map[string]time.Time{}, deletes: map[types.UID]time.Time{}}
		e.jobs[job.key] = p
	}
	return p
}

// jobRef identifies one incarnation of a job.
type jobRef struct {
	key types.NamespacedName
	uid types.UID
}

// expectCreates records pods a pass created.
func (e *expectations) expectCreates(job jobRef, pods []*corev1.Pod, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.entry(job)
	for _, pod := range pods {
		p.creates[pod.Name] = now
	}
}

// expectDeletes records pods a pass deleted.
func (e *expectations) expectDeletes(job jobRef, pods []*corev1.Pod, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.entry(job)
	for _, pod := range pods {
		p.deletes[pod.UID] = now
	}
}

// satisfied drops the expectations the cached pods meet — a created pod is
// present, a deleted one is gone or terminating — and those older than
// expectationTimeout, and reports whether none remain.
func (e *expectations) satisfied(job jobRef, cached []*corev1.Pod, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.jobs[job.key]
	if !ok || p.uid != job.uid {
		delete(e.jobs, job.key)
		return true
	}
	present := make(map[string]bool, len(cached))
	live := make(map[types.UID]bool, len(cached))
	for _, pod := range cached {
		present[pod.Name] = true
		if pod.DeletionTimestamp == nil {
			live[pod.UID] = true
		}
	}
	for name, at := range p.creates {
		if present[name] || now.Sub(at) > expectationTimeout {
			delete(p.creates, name)
		}
	}
	for uid, at := range p.deletes {
		if !live[uid] || now.Sub(at) > expectationTimeout {
			delete(p.deletes, uid)
		}
	}
	if len(p.creates) == 0 && len(p.deletes) == 0 {
		delete(e.jobs, job.key)
		return true
	}
	return false
}

// forget drops a deleted job's expectations.
func (e *expectations) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.jobs, key)
}
