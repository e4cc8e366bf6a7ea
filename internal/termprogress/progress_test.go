package termprogress

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
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
