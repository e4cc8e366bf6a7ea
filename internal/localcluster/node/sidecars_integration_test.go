//go:build integration

package node

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
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

// Native sidecars (init containers with restartPolicy Always) on the node:
// real sandboxes, statuses read back from the API server.

// sidecarOf makes c a sidecar.
func sidecarOf(c corev1.Container) corev1.Container {
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

// ctlVolume is a host directory of the test's, mounted at /ctl in each of
// the pod's containers, through which the test and the pod signal each
// other with files and FIFOs.
func ctlVolume(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	dir := podsHostDir(t)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "ctl", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}})
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: "ctl", MountPath: "/ctl"})
		}
	}
	return dir
}

// waitFile waits until the file exists and returns its content: a file
// whose content matters must appear whole (renamed into place).
func waitFile(t *testing.T, path string) string {
	t.Helper()
	var data []byte
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var err error
		data, err = os.ReadFile(path)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s not written within 30s", path)
	}
	return string(data)
}

func initStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	s, _ := findStatus(p.Status.InitContainerStatuses, name)
	return s
}

func mainStatus(p *corev1.Pod) corev1.ContainerStatus {
	s, _ := findStatus(p.Status.ContainerStatuses, "main")
	return s
}

// terminatedWith reports whether a status shows its container ended with
// code.
func terminatedWith(s corev1.ContainerStatus, code int32) bool {
	return s.State.Terminated != nil && s.State.Terminated.ExitCode == code
}

// A sidecar with a TCP startup probe must listen before the container
// starts: the container connects to it once and exits 0 only if it can. The
// sidecar listens only once the test opens a FIFO, so the container cannot
// start early by luck; until then the pod is Pending, not Initialized, its
// startup probe failing. The sidecar's log is served as any container's.
func TestSidecarListensBeforeTheContainerStarts(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	proxy := sidecarOf(helperContainer(t, "proxy", "serve-after", "/ctl/listen", "$(POD_IP):8080"))
	proxy.Env = append(proxy.Env, podIPEnvVar)
	proxy.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 600}
	main := helperContainer(t, "main", "must-connect", "$(POD_IP):8080")
	main.Env = append(main.Env, podIPEnvVar)
	pod := n.shellPod(ns, "listens-first", "")
	pod.Spec.InitContainers = []corev1.Container{proxy}
	pod.Spec.Containers = []corev1.Container{main}
	ctl := ctlVolume(t, pod)
	if err := syscall.Mkfifo(filepath.Join(ctl, "listen"), 0o666); err != nil {
		t.Fatal(err)
	}
	n.create(t, pod)

	waitEvent(t, n, ns, pod.Name, "Unhealthy", "Startup probe failed")
	held := n.waitPod(t, ns, pod.Name, 30*time.Second, "the sidecar running", func(p *corev1.Pod) bool { return initStatus(p, "proxy").State.Running != nil })
	if s := mainStatus(held); s.State.Waiting == nil || held.Status.Phase != corev1.PodPending {
		t.Fatalf("the container started before the sidecar listens: %s", describeStatus(held))
	}
	if s := initStatus(held, "proxy"); ptr.Deref(s.Started, false) || s.Ready {
		t.Errorf("sidecar started or ready before its probe passed: %s", describeStatus(held))
	}
	if c, _ := findCondition(held.Status.Conditions, corev1.PodInitialized); c.Status != corev1.ConditionFalse {
		t.Errorf("Initialized %+v before the sidecar started", c)
	}

	fifo, err := os.OpenFile(filepath.Join(ctl, "listen"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fifo.Close()
	done := n.waitPhase(t, ns, pod.Name, corev1.PodSucceeded)
	if s := mainStatus(done); !terminatedWith(s, 0) || s.RestartCount != 0 {
		t.Errorf("main %s, want exit code 0 on its first run", describeStatus(done))
	}
	if log := n.logs(t, ns, pod.Name, "main", ""); log != "connected\n" {
		t.Errorf("main's log %q, want it connected", log)
	}
	if log := n.logs(t, ns, pod.Name, "proxy", ""); !strings.HasPrefix(log, "listening on ") {
		t.Errorf("the sidecar's log %q, want it listening", log)
	}
}

// A sidecar that crashes is restarted, after the crash back-off, while the
// container runs on, under restartPolicy Never; the pod stays Running and
// Initialized, and succeeds as its container does.
func TestCrashingSidecarIsRestartedWhileTheContainerRuns(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "crashing-sidecar", "while [ ! -e /ctl/done ]; do sleep 0.1; done; echo done")
	pod.Spec.InitContainers = []corev1.Container{sidecarOf(shellContainer("proxy", "echo crashing; exit 3"))}
	ctl := ctlVolume(t, pod)
	n.create(t, pod)

	restarted := n.waitPod(t, ns, pod.Name, 30*time.Second, "the sidecar restarted twice", func(p *corev1.Pod) bool {
		return initStatus(p, "proxy").RestartCount >= 2
	})
	if s := mainStatus(restarted); s.State.Running == nil || s.RestartCount != 0 || restarted.Status.Phase != corev1.PodRunning {
		t.Errorf("main or the pod not running on: %s", describeStatus(restarted))
	}
	if last := initStatus(restarted, "proxy").LastTerminationState.Terminated; last == nil || last.ExitCode != 3 {
		t.Errorf("the sidecar's last state %+v, want exit code 3", last)
	}
	if c, _ := findCondition(restarted.Status.Conditions, corev1.PodInitialized); c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized %+v while the sidecar restarts, want True", c)
	}

	noErr(t, writeFile(filepath.Join(ctl, "done"), ""))
	done := n.waitPhase(t, ns, pod.Name, corev1.PodSucceeded)
	if s := mainStatus(done); !terminatedWith(s, 0) || s.RestartCount != 0 {
		t.Errorf("main %s, want exit code 0 on its first run", describeStatus(done))
	}
}

// A pod whose container exits 0 Succeeds, though its sidecar, stopped once
// the container is done, dies of SIGTERM (exit code 143): a sidecar's exit
// never fails the pod.
func TestPodSucceedsThoughItsSidecarDiedOfSIGTERM(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "sigterm-sidecar", "echo working")
	pod.Spec.InitContainers = []corev1.Container{sidecarOf(helperContainer(t, "proxy", "serve", "127.0.0.1:0"))}
	n.create(t, pod)
	done := n.waitPhase(t, ns, pod.Name, corev1.PodSucceeded)
	s := initStatus(done, "proxy")
	if !terminatedWith(s, 143) || s.Ready || ptr.Deref(s.Started, true) {
		t.Errorf("sidecar %s, want terminated by SIGTERM (143), neither ready nor started", describeStatus(done))
	}
	if c, _ := findCondition(done.Status.Conditions, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" {
		t.Errorf("Ready %+v, want False (PodCompleted)", c)
	}
}

// Under restartPolicy Never a container that fails fails the pod, and its
// sidecar is stopped: its process is gone.
func TestFailedContainerFailsThePodAndStopsTheSidecar(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	marker := strconv.Itoa(700000 + int(time.Now().UnixNano()%99999))
	pod := n.shellPod(ns, "fails-beside-sidecar", "exit 3")
	pod.Spec.InitContainers = []corev1.Container{sidecarOf(shellContainer("proxy", "exec sleep "+marker))}
	n.create(t, pod)
	failed := n.waitPhase(t, ns, pod.Name, corev1.PodFailed)
	if !terminatedWith(mainStatus(failed), 3) || !terminatedWith(initStatus(failed, "proxy"), 143) {
		t.Errorf("status %s, want main exited 3 and the sidecar stopped by SIGTERM (143)", describeStatus(failed))
	}
	waitForProcesses(t, marker, 0)
}

// Deleting a pod stops its container first and its sidecar once the
// container is gone. The container, on SIGTERM, holds on until the test
// releases it, and marks its exit; the sidecar, on SIGTERM, writes whether
// that mark was there.
func TestDeletionStopsTheContainerThenTheSidecar(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "ordered-stop", `trap 'touch /ctl/main-term; while [ ! -e /ctl/release ]; do sleep 0.1; done; touch /ctl/main-exited; exit 0' TERM
touch /ctl/main-trapping; while :; do sleep 0.1; done`)
	// The sidecar's answer is renamed into place: the test reads it whole.
	pod.Spec.InitContainers = []corev1.Container{sidecarOf(shellContainer("proxy", `trap 'if [ -e /ctl/main-exited ]; then echo after > /ctl/answer; else echo before > /ctl/answer; fi; mv /ctl/answer /ctl/proxy-term; exit 0' TERM
touch /ctl/proxy-trapping; while :; do sleep 0.1; done`))}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	ctl := ctlVolume(t, pod)
	n.create(t, pod)
	n.waitPhase(t, ns, pod.Name, corev1.PodRunning)
	// Delete once both shells trap SIGTERM.
	waitFile(t, filepath.Join(ctl, "proxy-trapping"))
	waitFile(t, filepath.Join(ctl, "main-trapping"))
	if err := n.client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(ctl, "main-term"))
	noErr(t, writeFile(filepath.Join(ctl, "release"), ""))
	if got := waitFile(t, filepath.Join(ctl, "proxy-term")); got != "after\n" {
		t.Errorf("the sidecar got SIGTERM %q the container exited, want after", strings.TrimSpace(got))
	}
	waitGone(t, n, ns, pod.Name, 30*time.Second)
}
