package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Why pods wait: a pod the scheduler cannot place, or whose containers the
// kubelet cannot start, holds the job in Pending with the scheduler's or the
// kubelet's own words, so that `get`, `describe`, the SDKs and the dashboard
// say what `kubectl describe pod` would, without the user finding the pod.

// startingReasons are the waiting reasons of a container that is on its way:
// they say nothing is wrong.
var startingReasons = map[string]bool{
	"":                  true,
	"ContainerCreating": true,
	"PodInitializing":   true,
}

// podsWaiting says why pods that exist cannot run: the reason and one line
// per distinct cause, naming its pods. Unschedulable pods come first (they
// are the ones a user must change the job or the cluster for); "" when no
// pod is held.
func podsWaiting(pods []*corev1.Pod) (reason, message string) {
	var unschedulable, cannotStart causes
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			continue
		}
		if msg, ok := schedulerSays(p); ok {
			unschedulable.add(msg, p.Name)
		} else if msg, ok := kubeletSays(p); ok {
			cannotStart.add(msg, p.Name)
		}
	}
	switch {
	case len(unschedulable.order) > 0:
		return paddlev1.ReasonUnschedulable, "the scheduler cannot place " + unschedulable.String()
	case len(cannotStart.order) > 0:
		return paddlev1.ReasonCannotStart, "the kubelet cannot start " + cannotStart.String()
	}
	return "", ""
}

// schedulerSays is the scheduler's message for a pod it left unplaced: its
// first sentence, what the nodes lack ("0/1 nodes are available: 1
// Insufficient cpu."), without what follows on claims and preemption.
func schedulerSays(p *corev1.Pod) (string, bool) {
	if p.Spec.NodeName != "" {
		return "", false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			msg := c.Message
			if i := strings.Index(msg, ". "); i >= 0 {
				msg = msg[:i+1]
			}
			return strings.TrimSpace(msg), true
		}
	}
	return "", false
}

// kubeletSays is the first container the kubelet cannot start, with its
// waiting reason and message.
func kubeletSays(p *corev1.Pod) (string, bool) {
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		w := cs.State.Waiting
		if w == nil || startingReasons[w.Reason] {
			continue
		}
		msg := fmt.Sprintf("container %s: %s", cs.Name, w.Reason)
		if w.Message != "" {
			msg += ": " + w.Message
		}
		return msg, true
	}
	return "", false
}

// causes groups pods by what holds them, in the order first seen.
type causes struct {
	order []string
	pods  map[string][]string
}

func (c *causes) add(cause, pod string) {
	if c.pods == nil {
		c.pods = map[string][]string{}
	}
	if _, ok := c.pods[cause]; !ok {
		c.order = append(c.order, cause)
	}
	c.pods[cause] = append(c.pods[cause], pod)
}

// String is "pod-a, pod-b: cause" per cause, separated by "; ".
func (c *causes) String() string {
	parts := make([]string, 0, len(c.order))
	for _, cause := range c.order {
		parts = append(parts, listNames(c.pods[cause])+": "+cause)
	}
	return strings.Join(parts, "; ")
}
