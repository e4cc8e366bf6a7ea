package node

// Native sidecar containers (KEP-753): init containers with restartPolicy
// Always, run as the kubelet runs them.
//   - Init containers start in order. A regular one runs to completion
//     before the next starts; a sidecar is started and the next starts once
//     it has started: its startup probe passed, or, without one the node
//     runs, its process runs (probes.go).
//   - A sidecar keeps running beside the containers and is restarted
//     whenever it exits, whatever its exit code and the pod's restartPolicy,
//     with the usual crash back-off (shouldRestart).
//   - Once no container of the pod will run again (each ended and its
//     restartPolicy does not run it again, a regular init container failed
//     for good, or the pod is stopped), the sidecars are stopped in reverse
//     order of their declaration, each once the one declared after it is
//     gone: SIGTERM, then SIGKILL when the pod's grace period is over. When
//     the pod is deleted, its containers are stopped first.
//   - A sidecar's exit never decides the pod's phase (status.go): only the
//     containers' do.

import (
	"context"
)

// sidecarRun is a sidecar's container loop, running beside the others.
type sidecarRun struct {
	// stop ends the loop: a running sidecar gets SIGTERM.
	stop context.CancelFunc
	// done closes once the loop has ended and its process is gone.
	done chan struct{}
}

// initialize runs the pod's init containers in order: each regular one to
// completion, each sidecar until it has started, after which it keeps
// running in a loop of its own. It reports whether every init container
// completed or started (false when one failed for good, or the pod was
// stopped first) and returns the sidecars it started, in declaration order.
func (r *podRuntime) initialize(ctx context.Context) (bool, []*sidecarRun) {
	var sidecars []*sidecarRun
	for _, c := range r.initRuns {
		if c.kind != kindSidecar {
			if !r.runContainer(ctx, c) {
				return false, sidecars
			}
			continue
		}
		sidecars = append(sidecars, r.startSidecar(c))
		select {
		case <-c.firstStart:
		case <-ctx.Done():
			return false, sidecars
		}
	}
	return true, sidecars
}

// startSidecar runs a sidecar's container loop until stopSidecars ends it.
// Its context is its own, not the pod's: stopping the pod stops the
// containers first, and the sidecars after them.
func (r *podRuntime) startSidecar(c *containerRun) *sidecarRun {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sidecarRun{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		r.runContainer(ctx, c)
	}()
	return s
}

// stopSidecars stops the sidecars once no other container of the pod runs:
// the last declared first, each once the one after it is gone, as the
// kubelet orders a pod's termination. A pod that was stopped keeps its
// deadline for SIGKILL; one whose containers ended gets its grace period
// (deletionGracePeriodSeconds, else terminationGracePeriodSeconds) from now,
// as the kubelet gives a pod it kills once its containers are done.
func (r *podRuntime) stopSidecars(sidecars []*sidecarRun) {
	if len(sidecars) == 0 {
		return
	}
	grace := gracePeriod(r.podCopy())
	r.mu.Lock()
	if r.killAt.IsZero() {
		r.killAt = r.deps.clock.Now().Add(grace)
	}
	r.mu.Unlock()
	for i := len(sidecars) - 1; i >= 0; i-- {
		sidecars[i].stop()
		<-sidecars[i].done
	}
}
