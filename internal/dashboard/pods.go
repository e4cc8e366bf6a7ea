package dashboard

// The job page's pods: a row each, saying why one waits or ended.

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/paddlefailure"
	"github.com/paddlejob/paddlejob/internal/sidecar"
	"github.com/paddlejob/paddlejob/internal/termprogress"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// podRowOf is a pod's row: a pending pod's reason is the scheduler's (its
// PodScheduled condition) until a container says more.
func podRowOf(p *corev1.Pod) PodRow {
	r := PodRow{
		Name: p.Name, Role: p.Labels[paddlev1.LabelReplicaType], State: termprogress.PodState(p),
		Node: p.Spec.NodeName, IP: p.Status.PodIP, Created: p.CreationTimestamp.Time,
		Containers: []string{}, InitContainers: []string{},
	}
	r.Index, _ = strconv.Atoi(p.Labels[paddlev1.LabelReplicaIndex])
	for _, c := range p.Spec.InitContainers {
		r.InitContainers = append(r.InitContainers, c.Name)
	}
	for _, c := range p.Spec.Containers {
		r.Containers = append(r.Containers, c.Name)
	}
	r.Reason, r.Message = p.Status.Reason, p.Status.Message
	finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	inits := len(p.Status.InitContainerStatuses)
	for i, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		r.Restarts += cs.RestartCount
		// A sidecar's end is not the pod's: it is stopped once the
		// containers are done, and its exit code fails nothing. An init
		// container that did its work says nothing of the pod either.
		if sidecar.Named(&p.Spec, cs.Name) && (cs.State.Terminated != nil || finished) ||
			i < inits && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			continue
		}
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			r.Reason, r.Message = cs.State.Waiting.Reason, cs.State.Waiting.Message
			if t := cs.LastTerminationState.Terminated; t != nil {
				r.ExitCode = &t.ExitCode
			}
		case cs.State.Terminated != nil && (cs.State.Terminated.ExitCode != 0 || r.ExitCode == nil):
			t := cs.State.Terminated
			// The message is the end of the log: the row shows its key line.
			r.Reason, r.Message, r.ExitCode = t.Reason, paddlefailure.KeyLine(t.Message), &t.ExitCode
		}
	}
	if r.Reason == "" && p.Status.Phase == corev1.PodPending {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				r.Reason, r.Message = c.Reason, c.Message
			}
		}
	}
	if f := client.ContainerFailures([]corev1.Pod{*p}); len(f) > 0 && f[0].Explanation != nil {
		r.Known = f[0].Explanation.ID
	}
	return r
}
