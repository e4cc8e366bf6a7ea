package node

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/sidecar"
)

// Pod status reasons and messages the node sets.
const (
	reasonShutdown  = "Terminated"
	messageShutdown = "Pod was terminated in response to imminent node shutdown."
)

// statusInput is what a pod's status is computed from.
type statusInput struct {
	Spec *corev1.PodSpec
	// Base is the status the API holds: conditions others own, qosClass.
	Base                   corev1.PodStatus
	InitStatuses, Statuses []corev1.ContainerStatus
	PodIPs, HostIPs        []string
	StartTime              *metav1.Time
	// SandboxReady is true while the pod's IP, files and volumes are in place.
	SandboxReady bool
	// Terminal is true once no container of the pod will run again because
	// the pod was stopped (deleted, or the node shut down).
	Terminal bool
	Shutdown bool
	// Evicted is why the node evicted the pod, "" unless it did.
	Evicted string
	Now     metav1.Time
}

// buildPodStatus computes the status the node reports for a pod.
func buildPodStatus(in statusInput) corev1.PodStatus {
	s := *in.Base.DeepCopy()
	s.InitContainerStatuses = in.InitStatuses
	s.ContainerStatuses = in.Statuses
	s.PodIPs = nil
	for _, ip := range in.PodIPs {
		s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
	}
	s.PodIP = first(in.PodIPs)
	s.HostIPs = nil
	for _, ip := range in.HostIPs {
		s.HostIPs = append(s.HostIPs, corev1.HostIP{IP: ip})
	}
	s.HostIP = first(in.HostIPs)
	if s.StartTime == nil {
		s.StartTime = in.StartTime
	}
	if s.Phase != corev1.PodSucceeded && s.Phase != corev1.PodFailed {
		s.Phase = podPhase(in.Spec, in.InitStatuses, in.Statuses, in.Terminal)
		s.Reason, s.Message = "", ""
		if in.Shutdown && s.Phase != corev1.PodSucceeded {
			s.Phase = corev1.PodFailed
			s.Reason, s.Message = reasonShutdown, messageShutdown
		}
		if in.Evicted != "" {
			// As the kubelet: Failed at once, whatever the containers.
			s.Phase = corev1.PodFailed
			s.Reason, s.Message = reasonEvicted, in.Evicted
		}
	}
	s.Conditions = podConditions(in, s.Phase)
	return s
}

// podPhase follows the kubelet: Pending until the init containers have
// completed (sidecars: started) and every container has started; Running
// while any container runs or will be restarted; Succeeded or Failed when
// none will run again, as the containers ended. A sidecar never decides the
// phase: a running one keeps the pod Running, and its end does not count.
func podPhase(spec *corev1.PodSpec, initStatuses, statuses []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	n := countForPhase(spec, initStatuses, statuses)
	if n.failedInit > 0 && (spec.RestartPolicy == corev1.RestartPolicyNever || terminal) {
		if n.runningSidecars > 0 && !terminal {
			// As the kubelet, no terminal phase while a container runs:
			// the sidecars started so far are being stopped.
			return corev1.PodPending
		}
		return corev1.PodFailed
	}
	if n.pendingInit > 0 || n.failedInit > 0 || (n.pendingSidecars > 0 && !n.initialized) {
		if terminal {
			return corev1.PodFailed
		}
		return corev1.PodPending
	}
	switch {
	case terminal:
		if n.running == 0 && n.waiting == 0 && n.unknown == 0 && n.stopped == n.succeeded && n.stopped > 0 {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case n.waiting > 0 || n.unknown > 0:
		return corev1.PodPending
	case n.running > 0:
		return corev1.PodRunning
	case spec.RestartPolicy == corev1.RestartPolicyAlways || spec.RestartPolicy == "":
		return corev1.PodRunning
	case n.stopped == n.succeeded:
		return corev1.PodSucceeded
	case spec.RestartPolicy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	default: // OnFailure: the failed containers will be restarted
		return corev1.PodRunning
	}
}

// phaseCounts counts a pod's containers by state, as the kubelet's phase
// computation does.
type phaseCounts struct {
	// Regular init containers not completed yet, and failed ones (waiting to
	// be retried, or not to be).
	pendingInit, failedInit int
	// Sidecars not started yet, and those running.
	pendingSidecars, runningSidecars int
	// initialized: a container has run, so every init container completed
	// or started once.
	initialized bool
	// Containers, and sidecars that run or wait for their first start; a
	// sidecar that ended (or waits to restart) is not counted.
	unknown, running, waiting, stopped, succeeded int
}

func countForPhase(spec *corev1.PodSpec, initStatuses, statuses []corev1.ContainerStatus) phaseCounts {
	var n phaseCounts
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cs, ok := findStatus(initStatuses, c.Name)
		switch {
		case sidecar.Is(c):
			n.countSidecar(cs, ok)
		case !ok || cs.State.Running != nil:
			n.pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				n.failedInit++
			}
		case cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0:
			n.failedInit++ // waiting to be restarted after a failure
		default:
			n.pendingInit++
		}
	}
	for _, c := range spec.Containers {
		cs, ok := findStatus(statuses, c.Name)
		switch {
		case !ok:
			n.unknown++
		case cs.State.Running != nil:
			n.running++
		case cs.State.Terminated != nil:
			n.stopped++
			if cs.State.Terminated.ExitCode == 0 {
				n.succeeded++
			}
		case cs.LastTerminationState.Terminated != nil:
			n.stopped++ // waiting to be restarted
		default:
			n.waiting++
		}
		n.initialized = n.initialized || (ok && containerRan(cs))
	}
	return n
}

// countSidecar counts a sidecar's status (ok: it has one).
func (n *phaseCounts) countSidecar(cs corev1.ContainerStatus, ok bool) {
	switch {
	case !ok:
		n.pendingSidecars++
		n.unknown++
	case cs.State.Running != nil:
		if !ptr.Deref(cs.Started, false) {
			n.pendingSidecars++
		}
		n.runningSidecars++
		n.running++
	case cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil:
		// It ran: its end is not the pod's.
	default:
		n.pendingSidecars++
		n.waiting++
	}
}

// containerRan reports whether a container's status shows it was started in
// this pod: it runs, ended, or waits to restart.
func containerRan(cs corev1.ContainerStatus) bool {
	return cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil
}

func findStatus(statuses []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	for _, s := range statuses {
		if s.Name == name {
			return s, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// podConditions computes the conditions the node owns and keeps the others
// (PodScheduled, readiness gates, disruption targets) as the API holds them.
func podConditions(in statusInput, phase corev1.PodPhase) []corev1.PodCondition {
	completed := phase == corev1.PodSucceeded || phase == corev1.PodFailed
	whenDone := func(reason string) string {
		if completed {
			return "PodCompleted"
		}
		return reason
	}

	notInitialized := uninitialized(in.Spec, in.InitStatuses, in.Statuses, phase)
	var unready []string
	for i := range in.Spec.InitContainers {
		c := &in.Spec.InitContainers[i]
		if cs, ok := findStatus(in.InitStatuses, c.Name); sidecar.Is(c) && (!ok || !cs.Ready) {
			unready = append(unready, c.Name)
		}
	}
	for _, c := range in.Spec.Containers {
		if cs, ok := findStatus(in.Statuses, c.Name); !ok || !cs.Ready {
			unready = append(unready, c.Name)
		}
	}
	containersReady := condition(corev1.ContainersReady, len(unready) == 0 && !completed,
		whenDone("ContainersNotReady"), containersMessage("unready", unready))
	podReady := containersReady
	podReady.Type = corev1.PodReady
	if missing := unmetReadinessGates(in.Spec, in.Base.Conditions); podReady.Status == corev1.ConditionTrue && len(missing) > 0 {
		podReady = condition(corev1.PodReady, false, "ReadinessGatesNotReady",
			"corresponding condition of pod readiness gate "+strings.Join(missing, ", ")+" does not exist or is not True")
	}
	owned := []corev1.PodCondition{
		condition(corev1.PodReadyToStartContainers, in.SandboxReady && !completed, "", ""),
		condition(corev1.PodInitialized, len(notInitialized) == 0,
			whenDone("ContainersNotInitialized"), containersMessage("incomplete", notInitialized)),
		containersReady,
		podReady,
	}

	isOwned := map[corev1.PodConditionType]bool{}
	for _, c := range owned {
		isOwned[c.Type] = true
	}
	var out []corev1.PodCondition
	if _, ok := findCondition(in.Base.Conditions, corev1.PodScheduled); !ok {
		out = append(out, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: in.Now})
	}
	for _, c := range in.Base.Conditions {
		if !isOwned[c.Type] {
			out = append(out, c)
		}
	}
	for _, c := range owned {
		c.LastTransitionTime = in.Now
		if prev, ok := findCondition(in.Base.Conditions, c.Type); ok && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}

// uninitialized names the init containers that keep the pod from being
// Initialized, as the kubelet decides it: those that have not completed, or
// (sidecars) not started. None once a container has run or the pod
// succeeded: a sidecar restarting later does not undo the initialization.
func uninitialized(spec *corev1.PodSpec, initStatuses, statuses []corev1.ContainerStatus, phase corev1.PodPhase) []string {
	if phase == corev1.PodSucceeded {
		return nil
	}
	for _, cs := range statuses {
		if containerRan(cs) {
			return nil
		}
	}
	var names []string
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cs, ok := findStatus(initStatuses, c.Name)
		done := ok && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		if sidecar.Is(c) {
			done = ok && ptr.Deref(cs.Started, false)
		}
		if !done {
			names = append(names, c.Name)
		}
	}
	return names
}

func condition(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
	if ok {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
	}
	return corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
}

func containersMessage(what string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("containers with %s status: [%s]", what, strings.Join(names, " "))
}

func findCondition(conds []corev1.PodCondition, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range conds {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

func unmetReadinessGates(spec *corev1.PodSpec, conds []corev1.PodCondition) []string {
	var missing []string
	for _, g := range spec.ReadinessGates {
		if c, ok := findCondition(conds, g.ConditionType); !ok || c.Status != corev1.ConditionTrue {
			missing = append(missing, string(g.ConditionType))
		}
	}
	return missing
}
