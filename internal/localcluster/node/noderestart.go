package node

// Node restarts. A node that is killed (not stopped: Run's shutdown reports
// its pods itself) leaves its pods in the API as it last reported them,
// while their processes died with it. When it starts again:
//   - before virtual-kubelet's pod controller creates any pod, it holds the
//     addresses of the unfinished pods bound to it, each for its own pod
//     (holdPodIPs, from the pod cache the controller will sync from), so a
//     pod that runs again gets its own address back and no other pod gets
//     one of them;
//   - virtual-kubelet then hands it every unfinished pod (CreatePod). A pod
//     whose containers had started is not run again: it is reported Failed,
//     reason NodeRestarted, its containers killed with exit code 137
//     (failRestartedPod), so whoever owns the pod decides, as after any
//     failure (the operator's restart policies recreate it and count the
//     restart). The API would refuse a started pod going back to Pending,
//     or a completed container running again. A pod still starting — waiting
//     in an init container such as the operator's wait-for-endpoints — runs
//     again from the start.

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/sidecar"
)

// The status of a pod that ran when its node restarted.
const (
	reasonNodeRestarted  = "NodeRestarted"
	messageNodeRestarted = "Pod was running when its node restarted: its containers were killed with the node and are not run again."
	// exitCodeKilled is a container's exit code after SIGKILL (128 + 9).
	exitCodeKilled = 137
	messageKilled  = "killed when the node restarted"
)

// restartFate is what a restarted node does with a pod bound to it that it
// finds in the API and does not run.
type restartFate int

const (
	// fateLeave: the pod is finished; nothing to do.
	fateLeave restartFate = iota
	// fateRunAgain: none of its containers had run for good (it was waiting
	// to start, or in an init container): it runs again from the start.
	fateRunAgain
	// fateFail: its containers had started: it is reported Failed.
	fateFail
)

func (f restartFate) String() string {
	return [...]string{"leave", "run again", "fail"}[f]
}

// fateAfterRestart decides what becomes of a pod the node finds bound to it
// without running it: a pod a killed node had run. A pod had started when it
// is Running, when one of its containers ran, or when one of its init
// containers completed: a completed init container cannot run again (the API
// refuses to see it leave its terminated state) and what it prepared in the
// pod's volumes died with the node. A sidecar that ran does not count: the
// API lets it run again, as it does after any exit.
func fateAfterRestart(pod *corev1.Pod) restartFate {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return fateLeave
	case corev1.PodRunning:
		return fateFail
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if ran(cs) {
			return fateFail
		}
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 && !sidecar.Named(&pod.Spec, cs.Name) {
			return fateFail
		}
	}
	return fateRunAgain
}

// ran reports whether a container's status shows it was started.
func ran(cs corev1.ContainerStatus) bool {
	return cs.State.Running != nil || cs.State.Terminated != nil ||
		cs.LastTerminationState.Terminated != nil || cs.RestartCount > 0 || ptr.Deref(cs.Started, false)
}

// nodeRestartedStatus is the status of a pod that ran when its node
// restarted: Failed, reason NodeRestarted; each container that was running
// (or waiting to restart) terminated with exit code 137, as SIGKILL leaves
// it; containers that had ended keep their end and those that never started
// stay waiting. Addresses, start time and the conditions others own are kept.
// A pod whose containers had all succeeded and would not run again, kept
// Running only by its sidecars, Succeeded: its sidecars' end is not its own.
func nodeRestartedStatus(pod *corev1.Pod, now metav1.Time) corev1.PodStatus {
	in := statusInput{
		Spec:      &pod.Spec,
		Base:      *pod.Status.DeepCopy(),
		PodIPs:    podIPsOf(&pod.Status),
		HostIPs:   hostIPsOf(&pod.Status),
		StartTime: pod.Status.StartTime,
		Terminal:  true,
		Now:       now,
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		in.InitStatuses = append(in.InitStatuses, killedByRestart(cs, now))
	}
	for _, cs := range pod.Status.ContainerStatuses {
		in.Statuses = append(in.Statuses, killedByRestart(cs, now))
	}
	in.Base.Phase, in.Base.Reason, in.Base.Message = corev1.PodFailed, reasonNodeRestarted, messageNodeRestarted
	if podPhase(&pod.Spec, in.InitStatuses, in.Statuses, false) == corev1.PodSucceeded {
		in.Base.Phase, in.Base.Reason, in.Base.Message = corev1.PodSucceeded, "", ""
	}
	return buildPodStatus(in)
}

// killedByRestart is a container's status once the node's restart killed it.
func killedByRestart(cs corev1.ContainerStatus, now metav1.Time) corev1.ContainerStatus {
	cs = *cs.DeepCopy()
	if cs.State.Terminated != nil || !ran(cs) {
		return cs
	}
	t := &corev1.ContainerStateTerminated{ExitCode: exitCodeKilled, Reason: reasonNodeRestarted, Message: messageKilled,
		FinishedAt: now, ContainerID: cs.ContainerID}
	if cs.State.Running != nil {
		t.StartedAt = cs.State.Running.StartedAt
	}
	cs.State = corev1.ContainerState{Terminated: t}
	cs.Ready = false
	cs.Started = ptr.To(false)
	return cs
}

func podIPsOf(s *corev1.PodStatus) []string {
	var out []string
	for _, ip := range s.PodIPs {
		out = append(out, ip.IP)
	}
	if len(out) == 0 && s.PodIP != "" {
		out = append(out, s.PodIP)
	}
	return out
}

func hostIPsOf(s *corev1.PodStatus) []string {
	var out []string
	for _, ip := range s.HostIPs {
		out = append(out, ip.IP)
	}
	if len(out) == 0 && s.HostIP != "" {
		out = append(out, s.HostIP)
	}
	return out
}

// failRestartedPod reports a pod that ran when the node restarted Failed
// (or Succeeded, when only its sidecars still ran: nodeRestartedStatus)
// through virtual-kubelet, which writes it, and frees the address held for
// it (it will not run again).
func (p *Provider) failRestartedPod(pod *corev1.Pod) {
	p.ipam.release(string(pod.UID))
	failed := pod.DeepCopy()
	failed.Status = nodeRestartedStatus(pod, metav1.NewTime(p.clock.Now()))
	p.log.Info("Pod ran before the node restarted: not running it again", "pod", podKey(pod.Namespace, pod.Name), "uid", pod.UID, "phase", failed.Status.Phase)
	p.deps.recorder.Event(pod, corev1.EventTypeWarning, reasonNodeRestarted, messageNodeRestarted)
	p.notifyPod(failed)
}

// podIPHold is an address to hold for a pod after a restart.
type podIPHold struct {
	namespace, name, uid, ip string
}

// podIPsToHold are the addresses to hold for the pods bound to the node when
// it starts: those of its unfinished pods that have an address of their own
// (not the host's), oldest pod first (see ipAllocator.hold).
func podIPsToHold(pods []*corev1.Pod) []podIPHold {
	var found []*corev1.Pod
	for _, p := range pods {
		if fateAfterRestart(p) != fateLeave && !p.Spec.HostNetwork && p.Status.PodIP != "" {
			found = append(found, p)
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i].CreationTimestamp, found[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return podKey(found[i].Namespace, found[i].Name) < podKey(found[j].Namespace, found[j].Name)
	})
	out := make([]podIPHold, 0, len(found))
	for _, p := range found {
		out = append(out, podIPHold{namespace: p.Namespace, name: p.Name, uid: string(p.UID), ip: p.Status.PodIP})
	}
	return out
}

// holdPodIPs holds the addresses of the pods bound to the node for their
// pods, once the pod cache has synced and before virtual-kubelet's pod
// controller creates any pod. A held address that no pod claims is freed
// when its pod is deleted (Provider.podDeleted).
func (n *Node) holdPodIPs(ctx context.Context) error {
	informer := n.podInformers.Core().V1().Pods()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return fmt.Errorf("the pod cache did not sync: %w", ctx.Err())
	}
	pods, err := informer.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	held := 0
	for _, h := range podIPsToHold(pods) {
		if !n.provider.ipam.hold(h.uid, h.ip) {
			n.log.Info("Cannot hold a pod's address: it will get another", "pod", podKey(h.namespace, h.name), "ip", h.ip)
			continue
		}
		// The cache drops a pod before telling podDeleted: a pod it no
		// longer holds may have been deleted before its address was held.
		if p, err := informer.Lister().Pods(h.namespace).Get(h.name); err != nil || string(p.UID) != h.uid {
			n.provider.ipam.releaseHeld(h.uid)
			continue
		}
		held++
	}
	if held > 0 {
		n.log.Info("Holding the addresses of the pods bound to the node", "pods", held)
	}
	return nil
}
