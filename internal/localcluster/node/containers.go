package node

// The container loop: how each container of a pod is run, restarted with
// CrashLoopBackOff after it exits (as the pod's restartPolicy says), and
// stopped with SIGTERM, then SIGKILL once the grace period is over.
// restart.go holds the restart policy and back-off arithmetic.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Container waiting reasons, as the kubelet reports them.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
	reasonConfigError       = "CreateContainerConfigError"
	reasonCreateError       = "CreateContainerError"
	reasonErrImagePull      = "ErrImagePull"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	reasonCompleted         = "Completed"
	reasonError             = "Error"
	reasonOOMKilled         = "OOMKilled"
	reasonStartError        = "StartError"
)

// retryInterval bounds the wait between attempts to start a container whose
// configuration or volumes are not ready; changes to the pod or to the
// ConfigMaps and Secrets of its namespace wake it sooner.
const retryInterval = 5 * time.Second

// defaultGracePeriod is the API's default terminationGracePeriodSeconds.
const defaultGracePeriod = 30 * time.Second

// waitError keeps a container waiting with a reason until something changes.
type waitError struct {
	reason string
	err    error
}

func (e *waitError) Error() string { return e.err.Error() }

func (e *waitError) Unwrap() error { return e.err }

// waitingReason is the container state reason an error to start it gives.
func waitingReason(err error) string {
	var we *waitError
	var ce *configError
	switch {
	case errors.As(err, &we):
		return we.reason
	case errors.As(err, &ce):
		return reasonConfigError
	}
	return reasonCreateError
}

// containerKind is what part a container plays in its pod.
type containerKind int

const (
	// kindContainer is one of the pod's containers.
	kindContainer containerKind = iota
	// kindInit is an init container that runs to completion.
	kindInit
	// kindSidecar is an init container with restartPolicy Always
	// (sidecars.go).
	kindSidecar
)

// containerRun is the node's record of one container of a pod.
type containerRun struct {
	spec *corev1.Container
	kind containerKind
	// runs counts the times the container was started.
	runs  int
	state corev1.ContainerState
	last  corev1.ContainerState
	// log is the latest run's log.
	log *containerLog
	// lastWarning avoids repeating an event while a container keeps waiting
	// for the same reason.
	lastWarning string
	// started is whether the current run has started: its startup probe
	// passed, or it has none the node runs (probes.go). ready is whether
	// its readiness probe passes. probeKilled is whether a startup or
	// liveness probe ended it.
	started, ready, probeKilled bool
	// firstStart closes when a sidecar has started for the first time: the
	// next init container may start (nil for other containers).
	firstStart chan struct{}
}

func (c *containerRun) restartCount() int32 { return int32(max(c.runs-1, 0)) }

// markStarted records that the current run has started; the caller holds
// the pod's mu.
func (c *containerRun) markStarted() {
	c.started = true
	if c.firstStart != nil {
		select {
		case <-c.firstStart:
		default:
			close(c.firstStart)
		}
	}
}

func (c *containerRun) status(podUID types.UID) corev1.ContainerStatus {
	running := c.state.Running != nil
	started := running && c.started
	ready := started && (c.ready || !probedReadiness(c.spec))
	if c.kind == kindInit {
		// As the kubelet reports it: ready once it has completed.
		ready = c.state.Terminated != nil && c.state.Terminated.ExitCode == 0
	}
	s := corev1.ContainerStatus{
		Name:                 c.spec.Name,
		Image:                c.spec.Image,
		ImageID:              c.spec.Image,
		RestartCount:         c.restartCount(),
		State:                *c.state.DeepCopy(),
		LastTerminationState: *c.last.DeepCopy(),
		Ready:                ready,
		Started:              ptr.To(started),
	}
	if c.runs > 0 {
		s.ContainerID = containerID(podUID, c.spec.Name, c.runs-1)
	}
	return s
}

// containerID names a run of a container in statuses.
func containerID(podUID types.UID, container string, run int) string {
	return fmt.Sprintf("paddlejob://%s-%s-%d", podUID, container, run)
}

func waiting(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

// runContainer runs a container until it need not run again: an init
// container until it succeeds, a container as its restart policy says, a
// sidecar until ctx ends. It reports whether the container's last run
// succeeded.
func (r *podRuntime) runContainer(ctx context.Context, c *containerRun) bool {
	var backoff time.Duration
	for ctx.Err() == nil {
		changed := r.changed.changed()
		spec, err := r.buildProcess(c)
		var term corev1.ContainerStateTerminated
		var refused *refusal
		switch {
		case errors.As(err, &refused):
			// It cannot run at all (paddlerelease.go): a run that failed.
			term = r.refuse(c, refused)
		case err != nil:
			reason := waitingReason(err)
			r.setState(c, waiting(reason, err.Error()))
			event := "Failed"
			if reason == reasonImagePullBackOff {
				event = "BackOff"
			}
			r.warnOnce(c, event, err.Error())
			select {
			case <-changed:
			case <-r.deps.clock.After(retryInterval):
			case <-ctx.Done():
				return false
			}
			continue
		default:
			term = r.runOnce(ctx, c, spec)
		}
		if ctx.Err() != nil || r.isStopping() {
			return false
		}
		if !shouldRestart(r.restartPolicy(), c.kind, term.ExitCode, r.killedByProbe(c)) {
			return term.ExitCode == 0
		}
		backoff = NextCrashBackoff(backoff, term.FinishedAt.Sub(term.StartedAt.Time))
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, c.spec.Name, r.name, r.namespace, r.uid)
		r.mu.Lock()
		c.last = corev1.ContainerState{Terminated: &term}
		c.state = waiting(reasonCrashLoopBackOff, msg)
		r.mu.Unlock()
		r.publish()
		r.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container "+c.spec.Name)
		select {
		case <-r.deps.clock.After(backoff):
		case <-ctx.Done():
		}
	}
	return false
}

// runOnce starts the container and waits for it to end, stopping it if the
// pod is stopped.
func (r *podRuntime) runOnce(ctx context.Context, c *containerRun, spec processSpec) corev1.ContainerStateTerminated {
	started := metav1.NewTime(r.deps.clock.Now())
	proc, err := r.deps.processes.start(spec)
	// bwrap holds its own copies of the mounts' descriptors now, and the
	// sandbox its own of the staged mounts.
	closeFiles(spec.Opened)
	if spec.Staged != nil {
		spec.Staged.unmount()
		defer spec.Staged.remove()
	}
	if err != nil {
		_ = spec.Log.close()
		if spec.Cgroup != nil {
			spec.Cgroup.remove()
		}
		term := corev1.ContainerStateTerminated{ExitCode: 128, Reason: reasonStartError, Message: err.Error(), StartedAt: started, FinishedAt: started}
		r.setState(c, corev1.ContainerState{Terminated: &term})
		r.event(corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		return term
	}
	r.mu.Lock()
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	c.lastWarning = ""
	c.ready, c.started, c.probeKilled = false, false, false
	if !runsProbe(c.spec.StartupProbe) {
		c.markStarted()
	}
	run := c.runs - 1
	r.mu.Unlock()
	r.publish()
	r.event(corev1.EventTypeNormal, "Started", "Started container "+c.spec.Name)

	// The probes of this run end before its end is recorded: none of them
	// changes what a later run reports.
	probing, stopProbing := context.WithCancel(ctx)
	var probes sync.WaitGroup
	probes.Go(func() { r.probe(probing, c, proc, started.Time) })
	r.awaitExit(ctx, c, proc)
	stopProbing()
	probes.Wait()
	_ = spec.Log.close()
	oomKilled := false
	if spec.Cgroup != nil {
		oomKilled = spec.Cgroup.oomKilled()
		spec.Cgroup.remove()
	}
	finished := metav1.NewTime(r.deps.clock.Now())
	term := corev1.ContainerStateTerminated{
		ExitCode:    proc.exitCode(),
		Reason:      reasonCompleted,
		StartedAt:   started,
		FinishedAt:  finished,
		ContainerID: containerID(r.uid, c.spec.Name, run),
	}
	output := spec.Log.terminationMessage()
	if line, ok := startFailure(term.ExitCode, finished.Sub(started.Time), output); ok {
		term.ExitCode, term.Reason, term.Message = 128, reasonStartError, line
	} else if term.ExitCode != 0 {
		term.Reason = reasonError
		if oomKilled {
			term.Reason = reasonOOMKilled
		}
		term.Message = failureMessage(c.spec.TerminationMessagePolicy, output)
	}
	r.setState(c, corev1.ContainerState{Terminated: &term})
	r.deps.log.V(1).Info("Container exited", "pod", r.key, "container", c.spec.Name, "exitCode", term.ExitCode, "reason", term.Reason)
	return term
}

// awaitExit waits for the process to end. When the pod is stopped it sends
// SIGTERM to the container's processes, waits out the grace period (which a
// later stop may shorten) and then sends SIGKILL.
func (r *podRuntime) awaitExit(ctx context.Context, c *containerRun, proc containerProcess) {
	select {
	case <-proc.exited():
		return
	case <-ctx.Done():
	}
	r.event(corev1.EventTypeNormal, "Killing", "Stopping container "+c.spec.Name)
	proc.signal(syscall.SIGTERM)
	for {
		graceChanged := r.graceChanged.changed()
		r.mu.Lock()
		left := r.killAt.Sub(r.deps.clock.Now())
		r.mu.Unlock()
		if left <= 0 {
			proc.signal(syscall.SIGKILL)
			<-proc.exited()
			return
		}
		timer := r.deps.clock.NewTimer(left)
		select {
		case <-proc.exited():
			timer.Stop()
			return
		case <-timer.C():
		case <-graceChanged:
			timer.Stop()
		}
	}
}

// gracePeriod is how long a deleted pod's containers get to stop.
func gracePeriod(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultGracePeriod
}
