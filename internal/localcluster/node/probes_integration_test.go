//go:build integration

package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

func podReadyIs(want corev1.ConditionStatus) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == want
			}
		}
		return false
	}
}

func containerRunning(p *corev1.Pod) bool {
	return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
}

// A TCP readiness probe: a running container is not Ready until its port
// accepts connections.
func TestTCPReadinessProbe(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	ctl := podsHostDir(t)
	listen := filepath.Join(ctl, "listen")
	if err := syscall.Mkfifo(listen, 0o666); err != nil {
		t.Fatal(err)
	}
	pod := n.shellPod(ns, "tcp-probed", "")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	c := helperContainer(t, "main", "serve-after", "/ctl/listen", "$(POD_IP):8080")
	c.Env = append(c.Env, podIPEnvVar)
	c.VolumeMounts = []corev1.VolumeMount{{Name: "ctl", MountPath: "/ctl"}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	pod.Spec.Containers = []corev1.Container{c}
	pod.Spec.Volumes = []corev1.Volume{{Name: "ctl", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: ctl}}}}
	n.create(t, pod)

	running := n.waitPod(t, ns, pod.Name, 30*time.Second, "container running", containerRunning)
	if podReadyIs(corev1.ConditionTrue)(running) || running.Status.ContainerStatuses[0].Ready {
		t.Fatalf("Ready before its port listens: %s", describeStatus(running))
	}
	// Opening the FIFO lets the server listen.
	fifo, err := os.OpenFile(listen, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fifo.Close()
	ready := n.waitPod(t, ns, pod.Name, 30*time.Second, "Ready", podReadyIs(corev1.ConditionTrue))
	if !ready.Status.ContainerStatuses[0].Ready {
		t.Errorf("pod Ready, container not: %s", describeStatus(ready))
	}
}

// An HTTP readiness probe on a named port: Ready while the handler answers
// 200, unready again after failureThreshold failures.
func TestHTTPReadinessProbe(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	ctl := podsHostDir(t)
	pod := n.shellPod(ns, "http-probed", "")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	c := helperContainer(t, "main", "http-ready", "/ctl/ok", "$(POD_IP):8081")
	c.Env = append(c.Env, podIPEnvVar)
	c.Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8081}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "ctl", MountPath: "/ctl"}}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("web")}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	pod.Spec.Containers = []corev1.Container{c}
	pod.Spec.Volumes = []corev1.Volume{{Name: "ctl", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: ctl}}}}
	n.create(t, pod)

	ok := filepath.Join(ctl, "ok")
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n.waitPod(t, ns, pod.Name, 30*time.Second, "Ready while /ready answers 200", podReadyIs(corev1.ConditionTrue))
	if err := os.Remove(ok); err != nil {
		t.Fatal(err)
	}
	unready := n.waitPod(t, ns, pod.Name, 30*time.Second, "not Ready once /ready answers 503", podReadyIs(corev1.ConditionFalse))
	if !containerRunning(unready) {
		t.Errorf("the container stopped: %s", describeStatus(unready))
	}
}

// An exec probe is not run: the container is Ready while it runs.
func TestExecReadinessProbeIsNotRun(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "exec-probed", "")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	pod.Spec.Containers = []corev1.Container{helperContainer(t, "main", "serve", "127.0.0.1:0")}
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}
	n.create(t, pod)
	n.waitPod(t, ns, pod.Name, 30*time.Second, "Ready", podReadyIs(corev1.ConditionTrue))
	// ...and the node says why in an event, once.
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := n.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ProbeNotRun"})
		if err != nil {
			return false, nil
		}
		return len(events.Items) == 1 && events.Items[0].Type == corev1.EventTypeWarning &&
			strings.Contains(events.Items[0].Message, "does not run exec or gRPC probes: container main counts as ready while it runs"), nil
	})
	if err != nil {
		t.Fatalf("no ProbeNotRun warning event saying the exec probe is not run: %v", err)
	}
}

// A liveness probe that keeps failing kills the container (SIGTERM: a Go
// program without a handler ends with 143), which restarts as its
// restartPolicy says.
func TestLivenessProbeRestartsTheContainer(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "liveness-probed", "")
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	c := helperContainer(t, "main", "serve", "$(POD_IP):8083")
	c.Env = append(c.Env, podIPEnvVar)
	// Nothing listens on 8084.
	c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8084)}},
		PeriodSeconds: 1, FailureThreshold: 2}
	pod.Spec.Containers = []corev1.Container{c}
	n.create(t, pod)
	got := n.waitPod(t, ns, pod.Name, 30*time.Second, "restarted after its liveness probe failed", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	if last := got.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 143 {
		t.Errorf("last state %s, want terminated by SIGTERM (143)", describeStatus(got))
	}
	waitEvent(t, n, ns, pod.Name, "Killing", "Container main failed liveness probe, will be restarted")
}
