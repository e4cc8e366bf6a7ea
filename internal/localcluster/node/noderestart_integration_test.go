//go:build integration

package node

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestNodeStartsAfterAKill starts a node whose pods a killed run of it left
// in the API as it last reported them: a started pod is reported Failed
// (NodeRestarted, its container killed with 137) and not run again, a pod
// that waited in its init container runs again from the start on its own
// address, a new pod gets another address, and a finished pod stays as it
// was.
func TestNodeStartsAfterAKill(t *testing.T) {
	t.Parallel()
	cfg := cluster(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	ns := "node-restart-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	marker := strconv.Itoa(700000 + int(time.Now().UnixNano()%99999))
	left := leaveKilledNodePods(t, client, ns, marker)

	n := startNode(t, cfg, killedNodeName, false)

	failed := n.waitPhase(t, ns, "trainer", corev1.PodFailed)
	if failed.UID != left.trainer.UID || failed.Status.Reason != reasonNodeRestarted || !strings.Contains(failed.Status.Message, "node restarted") {
		t.Errorf("the started pod: %s %q; want Failed, %s, saying the node restarted", describeStatus(failed), failed.Status.Message, reasonNodeRestarted)
	}
	if term := failed.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != exitCodeKilled || !term.StartedAt.Equal(&left.started) {
		t.Errorf("its container: %s; want terminated with exit code %d, its start kept", describeStatus(failed), exitCodeKilled)
	}
	if term := failed.Status.InitContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("its init container: %s; want its completion kept", describeStatus(failed))
	}
	if failed.Status.PodIP != killedStartedIP {
		t.Errorf("its address became %s, want %s kept", failed.Status.PodIP, killedStartedIP)
	}

	ranAgain := n.waitPhase(t, ns, "waiter", corev1.PodSucceeded)
	if ranAgain.UID != left.waiter.UID || ranAgain.Status.PodIP != killedWaitingIP {
		t.Errorf("the waiting pod ran again on %s, want its own address %s", ranAgain.Status.PodIP, killedWaitingIP)
	}
	if got := n.logs(t, ns, "waiter", "main", ""); got != "ip="+killedWaitingIP+"\n" {
		t.Errorf("the waiting pod's container saw %q, want its own address", got)
	}
	if got := n.logs(t, ns, "waiter", "wait", ""); got != "init done\n" {
		t.Errorf("the waiting pod's init container logged %q: it did not run again from the start", got)
	}

	fresh := n.waitPhase(t, ns, "newcomer", corev1.PodSucceeded)
	if fresh.UID != left.newcomer.UID || fresh.Status.PodIP == "" || fresh.Status.PodIP == killedWaitingIP {
		t.Errorf("the new pod got address %q, want one of its own (not the waiting pod's %s)", fresh.Status.PodIP, killedWaitingIP)
	}

	if procs := processesWith(marker); len(procs) > 0 {
		t.Errorf("the started pod runs again: processes %v", procs)
	}
	still, err := client.CoreV1().Pods(ns).Get(ctx, "trainer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if still.Status.Phase != corev1.PodFailed {
		t.Errorf("the started pod left Failed: %s", describeStatus(still))
	}
	after, err := client.CoreV1().Pods(ns).Get(ctx, "done", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != left.done.ResourceVersion {
		t.Errorf("the finished pod was written: %s", describeStatus(after))
	}
	t.Logf("addresses: trainer %s, waiter %s, newcomer %s", failed.Status.PodIP, ranAgain.Status.PodIP, fresh.Status.PodIP)
}

// The node TestNodeStartsAfterAKill starts, and its pods' addresses: far
// from the addresses the other test nodes hand out first.
const (
	killedNodeName   = "killed-node"
	killedStartedIP  = "10.244.200.140"
	killedWaitingIP  = "10.244.200.150"
	killedFinishedIP = "10.244.200.160"
)

// killedNodePods are the pods a killed run of killedNodeName left in the
// API: trainer started (its process runs `sleep marker`), waiter in its init
// container, done finished; newcomer was created since. started is when the
// killed run started them.
type killedNodePods struct {
	trainer, waiter, done, newcomer *corev1.Pod
	started                         metav1.Time
}

// leaveKilledNodePods creates killedNodePods in ns, each with the status the
// killed node last reported.
func leaveKilledNodePods(t *testing.T, client kubernetes.Interface, ns, marker string) killedNodePods {
	t.Helper()
	ctx := context.Background()
	pod := func(name string, script string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{
				NodeName:                      killedNodeName,
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](2),
				InitContainers:                []corev1.Container{shellContainer("wait", "echo init done")},
				Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c", script},
					Env: []corev1.EnvVar{podIPEnvVar}}},
			},
		}
	}
	// leave creates a pod with the status a killed node last reported.
	leave := func(p *corev1.Pod, status corev1.PodStatus) *corev1.Pod {
		t.Helper()
		created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = status
		updated, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("writing the status of %s: %v", p.Name, err)
		}
		return updated
	}
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	ips := func(ip string) ([]corev1.PodIP, []corev1.HostIP) {
		return []corev1.PodIP{{IP: ip}}, []corev1.HostIP{{IP: DefaultNodeIP}}
	}
	podIPs, hostIPs := ips(killedStartedIP)
	trainer := leave(pod("trainer", "echo ran again; sleep "+marker), corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: killedStartedIP, PodIPs: podIPs, HostIP: DefaultNodeIP, HostIPs: hostIPs, StartTime: &started,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "wait", Image: "busybox:1.36",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: reasonCompleted, StartedAt: started, FinishedAt: started}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "busybox:1.36", Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
	})
	podIPs, hostIPs = ips(killedWaitingIP)
	waiter := leave(pod("waiter", "echo ip=$POD_IP"), corev1.PodStatus{
		Phase: corev1.PodPending, PodIP: killedWaitingIP, PodIPs: podIPs, HostIP: DefaultNodeIP, HostIPs: hostIPs, StartTime: &started,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "wait", Image: "busybox:1.36",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "busybox:1.36",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonPodInitializing}}}},
	})
	podIPs, _ = ips(killedFinishedIP)
	done := leave(pod("done", "true"), corev1.PodStatus{
		Phase: corev1.PodSucceeded, PodIP: killedFinishedIP, PodIPs: podIPs, StartTime: &started,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "busybox:1.36",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: reasonCompleted, StartedAt: started, FinishedAt: started}}}},
	})
	newcomer, err := client.CoreV1().Pods(ns).Create(ctx, pod("newcomer", "echo ip=$POD_IP"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return killedNodePods{trainer: trainer, waiter: waiter, done: done, newcomer: newcomer, started: started}
}
