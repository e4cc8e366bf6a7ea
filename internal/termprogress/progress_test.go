package termprogress

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// A pod's state in a word, with a sidecar (an init container with
// restartPolicy Always) among its init containers: once started it counts as
// initialized, as a completed init container does.
func TestPodStateWithASidecar(t *testing.T) {
	running := func(name string, started bool) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Started: ptr.To(started), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	waiting := func(name, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	completed := corev1.ContainerStatus{Name: "setup", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}
	tests := []struct {
		name  string
		phase corev1.PodPhase
		inits []corev1.ContainerStatus
		want  string
	}{
		{"sidecar starting", corev1.PodPending, []corev1.ContainerStatus{running("proxy", false), waiting("setup", "PodInitializing")}, "Init:0/2"},
		{"sidecar crashing before it started", corev1.PodPending, []corev1.ContainerStatus{waiting("proxy", "CrashLoopBackOff"), waiting("setup", "PodInitializing")}, "Init:CrashLoopBackOff"},
		{"sidecar started, next init container runs", corev1.PodPending, []corev1.ContainerStatus{running("proxy", true), running("setup", false)}, "Init:1/2"},
		{"sidecar started, waiting for peers", corev1.PodPending, []corev1.ContainerStatus{running("proxy", true), running("wait-for-endpoints", false)}, "WaitingForPeers"},
		{"volumes not mounted, peers not waited for yet", corev1.PodPending, []corev1.ContainerStatus{running("proxy", true), waiting("wait-for-endpoints", "PodInitializing")}, "Init:1/2"},
		{"initialized, containers starting", corev1.PodPending, []corev1.ContainerStatus{running("proxy", true), completed}, "ContainerCreating"},
		{"running beside the containers", corev1.PodRunning, []corev1.ContainerStatus{running("proxy", true), completed}, "Running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{
				Spec: corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "main"}}},
				Status: corev1.PodStatus{Phase: tc.phase, InitContainerStatuses: tc.inits,
					ContainerStatuses: []corev1.ContainerStatus{waiting("main", "")}},
			}
			for _, cs := range tc.inits {
				c := corev1.Container{Name: cs.Name}
				if cs.Name == "proxy" {
					c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				}
				p.Spec.InitContainers = append(p.Spec.InitContainers, c)
			}
			if got := PodState(p); got != tc.want {
				t.Errorf("PodState = %q, want %q", got, tc.want)
			}
		})
	}
}

// A finished job's lines count its roles as it finished (its status), not
// the pods the operator is stopping; a Pending job held by the kubelet says
// so in the operator's words.
func TestLinesOfFinishedAndHeldJobs(t *testing.T) {
	done := testutil.MakePaddleJob("wd", "ns").PS(2).Workers(2).Obj()
	done.Status = paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobCompleted,
		PS:     &paddlev1.ReplicaStatus{Stopped: 2, Ready: "0/2"},
		Worker: &paddlev1.ReplicaStatus{Succeeded: 2, Ready: "0/2"}}
	ps0 := corev1.Pod{}
	ps0.Labels = map[string]string{paddlev1.LabelReplicaType: "ps"}
	ps0.Status.Phase = corev1.PodRunning
	got := strings.Join(Lines(client.Snapshot{Job: done, Pods: []corev1.Pod{ps0}}, 0), "\n")
	for _, want := range []string{"ps      0/2 running   Stopped 2", "worker  0/2 running   Succeeded 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("lines of a completed job:\n%s\nwant %q", got, want)
		}
	}

	held := testutil.MakePaddleJob("wd", "ns").Workers(1).Obj()
	held.Status = paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobPending, Conditions: []metav1.Condition{{
		Type: paddlev1.JobRunning, Status: metav1.ConditionFalse, Reason: paddlev1.ReasonCannotStart,
		Message: "the kubelet cannot start wd-worker-0: container paddle: ImagePullBackOff",
	}}}
	got = strings.Join(Lines(client.Snapshot{Job: held}, 0), "\n")
	if want := "  CannotStart: the kubelet cannot start wd-worker-0: container paddle: ImagePullBackOff"; !strings.Contains(got, want) {
		t.Errorf("lines of a held job:\n%s\nwant %q", got, want)
	}
}

// Pods placed but held before they start say what holds them, one line per
// message: the node's words beside a starting reason (a volume it cannot
// mount, a runtime it installs). Other reasons, pods that run and pods not
// placed are said elsewhere.
func TestWaitingLines(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase, inits, containers []corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-" + name},
			Status: corev1.PodStatus{Phase: phase, InitContainerStatuses: inits, ContainerStatuses: containers}}
	}
	waiting := func(reason, message string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}
	}
	done := []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
	const mount = `hostPath volume "output": open /tmp/out: no such file or directory`
	const install = "installing the Paddle 3.0.0 runtime image \"x\" runs on"
	pods := []corev1.Pod{
		pod("worker-0", corev1.PodPending, waiting("PodInitializing", mount), waiting("PodInitializing", "")),
		pod("ps-0", corev1.PodPending, done, waiting("ContainerCreating", install)),
		pod("worker-1", corev1.PodPending, waiting("PodInitializing", mount), nil),
		pod("ps-1", corev1.PodPending, waiting("ErrImagePull", "not found"), nil),
		pod("ps-2", corev1.PodPending, waiting("PodInitializing", ""), waiting("ContainerCreating", install)),
		pod("ps-3", corev1.PodRunning, nil, waiting("ContainerCreating", install)),
	}
	want := []string{"worker-0, worker-1: " + mount, "ps-0: " + install}
	if got := WaitingLines("job", pods); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("WaitingLines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Pods the scheduler cannot place, one line per reason in the order first
// seen, each naming its pods.
func TestPendingLines(t *testing.T) {
	us := []client.Unschedulable{
		{Pod: "job-ps-0", Message: "0/2 nodes are available: 2 Insufficient cpu."},
		{Pod: "job-worker-0", Message: "0/2 nodes are available: 2 node(s) had untolerated taint(s)."},
		{Pod: "job-ps-1", Message: "0/2 nodes are available: 2 Insufficient cpu."},
	}
	want := []string{
		"Pending ps-0, ps-1: the scheduler cannot place it: 0/2 nodes are available: 2 Insufficient cpu.",
		"Pending worker-0: the scheduler cannot place it: 0/2 nodes are available: 2 node(s) had untolerated taint(s).",
	}
	if got := PendingLines("job", us); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("PendingLines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
