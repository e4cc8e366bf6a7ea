//go:build integration

package node

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodRunsToCompletion(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	n.create(t, n.shellPod(ns, "hello", "echo hi; exit 0"))
	pod := n.waitPhase(t, ns, "hello", corev1.PodSucceeded)
	term := pod.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("container state = %s", describeStatus(pod))
	}
	if ip, err := netip.ParseAddr(pod.Status.PodIP); err != nil || !netip.MustParsePrefix(DefaultPodCIDR).Contains(ip) || pod.Status.HostIP != DefaultNodeIP {
		t.Errorf("podIP %q hostIP %q, want a pod IP of %s and the node IP", pod.Status.PodIP, pod.Status.HostIP, DefaultPodCIDR)
	}
	if got := n.logs(t, ns, "hello", "main", ""); got != "hi\n" {
		t.Errorf("log = %q, want %q", got, "hi\n")
	}
}

func TestPodFails(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	n.create(t, n.shellPod(ns, "fails", "echo oops >&2; exit 3"))
	pod := n.waitPhase(t, ns, "fails", corev1.PodFailed)
	term := pod.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" {
		t.Fatalf("container state = %s", describeStatus(pod))
	}
	if got := n.logs(t, ns, "fails", "main", ""); got != "oops\n" {
		t.Errorf("log = %q, want stderr's %q", got, "oops\n")
	}
}

func TestRestartPolicyOnFailure(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "crashes", `echo "run at $(date +%s.%N)"; exit 1`)
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	n.create(t, pod)
	got := n.waitPod(t, ns, "crashes", 20*time.Second, "two restarts", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
	})
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running while the container is restarted", got.Status.Phase)
	}
	last := got.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 1 {
		t.Errorf("lastState = %s, want terminated with exit code 1", describeStatus(got))
	}
	if prev := n.logs(t, ns, "crashes", "main", "previous=true"); !strings.HasPrefix(prev, "run at ") {
		t.Errorf("previous log = %q", prev)
	}
}

func TestRestartPolicyOnFailureSucceedsAfterRetry(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	dir := podsHostDir(t)
	// Fails on the first run, succeeds on the second.
	pod := n.shellPod(ns, "flaky", "if [ -e /state/ran ]; then exit 0; fi; touch /state/ran; exit 7")
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pod.Spec.Volumes = []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: "/state"}}
	n.create(t, pod)
	got := n.waitPhase(t, ns, "flaky", corev1.PodSucceeded)
	if cs := got.Status.ContainerStatuses[0]; cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 7 {
		t.Errorf("status = %s, want one restart after exit code 7", describeStatus(got))
	}
}

func TestInitContainersRunFirst(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "init", "cat /work-dir/order")
	pod.Spec.InitContainers = []corev1.Container{
		shellContainer("first", "sleep 0.2; echo first >> /work-dir/order"),
		shellContainer("second", "echo second >> /work-dir/order"),
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work-dir"}}
		}
	}
	n.create(t, pod)
	got := n.waitPhase(t, ns, "init", corev1.PodSucceeded)
	if log := n.logs(t, ns, "init", "main", ""); log != "first\nsecond\n" {
		t.Errorf("main saw %q, want the init containers' output in order", log)
	}
	for _, s := range got.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" {
			t.Errorf("init container %s: %s", s.Name, describeStatus(got))
		}
	}
	if c, ok := findCondition(got.Status.Conditions, corev1.PodInitialized); !ok || c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized condition = %+v", c)
	}
}

func TestFailingInitContainerFailsPodWithRestartPolicyNever(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "badinit", "echo must not run")
	pod.Spec.InitContainers = []corev1.Container{shellContainer("setup", "exit 4")}
	n.create(t, pod)
	got := n.waitPhase(t, ns, "badinit", corev1.PodFailed)
	if s := got.Status.ContainerStatuses[0]; s.State.Waiting == nil {
		t.Errorf("main container ran: %s", describeStatus(got))
	}
}

func TestUnknownImageWaitsWithErrImagePull(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "unknown", "")
	pod.Spec.Containers[0] = corev1.Container{Name: "main", Image: "registry.example/unknown:v2"}
	n.create(t, pod)
	got := n.waitPod(t, ns, "unknown", 10*time.Second, "ErrImagePull", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "ErrImagePull"
	})
	msg := got.Status.ContainerStatuses[0].State.Waiting.Message
	for _, want := range []string{"registry.example/unknown:v2", filepath.Join(n.stateDir, "images.yaml"), "images:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not mention %q", msg, want)
		}
	}
	if got.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %s, want Pending", got.Status.Phase)
	}
}

func TestImageTableCommand(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "mapped", "")
	// The node's table maps this image to "sleep 1000"; args replace the
	// image's.
	pod.Spec.Containers[0] = corev1.Container{Name: "main", Image: "example.com/sleeper:v1", Args: []string{"0.1"}}
	n.create(t, pod)
	n.waitPhase(t, ns, "mapped", corev1.PodSucceeded)
}

func TestHostNetworkPodHasNodeIP(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "hostnet", "hostname")
	pod.Spec.HostNetwork = true
	n.create(t, pod)
	got := n.waitPhase(t, ns, "hostnet", corev1.PodSucceeded)
	if got.Status.PodIP != DefaultNodeIP {
		t.Errorf("podIP = %s, want the node IP", got.Status.PodIP)
	}
	host, _ := os.Hostname()
	if log := n.logs(t, ns, "hostnet", "main", ""); log != host+"\n" {
		t.Errorf("hostname = %q, want the node's %q", log, host)
	}
}

func TestDeleteRunningPodStopsItsProcesses(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	marker := strconv.Itoa(900000 + int(time.Now().UnixNano()%99999))
	// A child in the background, and a main process that ignores SIGTERM:
	// both must be gone once the grace period ends.
	pod := n.shellPod(ns, "sleeper", fmt.Sprintf("sleep %s & trap '' TERM; sleep %s.5; wait", marker, marker))
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	n.create(t, pod)
	n.waitPhase(t, ns, "sleeper", corev1.PodRunning)
	waitForProcesses(t, marker, 2)

	start := time.Now()
	if err := n.client.CoreV1().Pods(ns).Delete(context.Background(), "sleeper", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForProcesses(t, marker, 0)
	// Its 2s grace period, not the default 30s, ends it: the bound lies
	// between the two.
	gone := waitGone(t, n, ns, "sleeper", 20*time.Second)
	t.Logf("processes gone and pod deleted %s after the delete", gone.Sub(start).Round(time.Millisecond))
}

func TestDeletedPodStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "polite", "trap 'echo got TERM; exit 0' TERM; echo trapping; while :; do sleep 0.1; done")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	n.create(t, pod)
	n.waitPhase(t, ns, "polite", corev1.PodRunning)
	// The shell is its sandbox's first process, which ignores a signal it has
	// no handler for yet, as PID 1 in a container does: delete once it traps.
	waitForLog(t, n, ns, "polite", "trapping\n", 10*time.Second)
	start := time.Now()
	if err := n.client.CoreV1().Pods(ns).Delete(context.Background(), "polite", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// It exits on SIGTERM, so it goes long before its 30s grace period ends
	// (the bound lies well inside it).
	gone := waitGone(t, n, ns, "polite", 15*time.Second)
	t.Logf("pod deleted %s after the delete", gone.Sub(start).Round(time.Millisecond))
}

// waitGone waits until the pod is deleted from the API and returns when.
func waitGone(t testing.TB, n *testNode, ns, name string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := n.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s still exists after %s", ns, name, timeout)
	return time.Time{}
}

// waitForProcesses waits until exactly want processes have marker in their
// command line.
func waitForProcesses(t testing.TB, marker string, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var pids []int
	for time.Now().Before(deadline) {
		pids = processesWith(marker)
		if len(pids) == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%d processes with %q in their command line (%v), want %d", len(pids), marker, pids, want)
}

func processesWith(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "sleep" && strings.Contains(string(cmdline), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestRecreatedPodStartsAfterTheOldOneStopped force-deletes a running pod and
// at once creates one of the same name: the new pod runs once the old one's
// processes are gone.
func TestRecreatedPodStartsAfterTheOldOneStopped(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	marker := strconv.Itoa(600000 + int(time.Now().UnixNano()%99999))
	n.create(t, n.shellPod(ns, "again", "exec sleep "+marker))
	n.waitPhase(t, ns, "again", corev1.PodRunning)
	waitForProcesses(t, marker, 1)
	if err := n.client.CoreV1().Pods(ns).Delete(context.Background(), "again", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	n.create(t, n.shellPod(ns, "again", "echo second incarnation"))
	n.waitPhase(t, ns, "again", corev1.PodSucceeded)
	if got := n.logs(t, ns, "again", "main", ""); got != "second incarnation\n" {
		t.Errorf("log = %q", got)
	}
	waitForProcesses(t, marker, 0)
}

func TestMissingCommandIsAStartError(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "nocmd", "")
	pod.Spec.Containers[0].Command = []string{"/nonexistent/program"}
	n.create(t, pod)
	got := n.waitPhase(t, ns, "nocmd", corev1.PodFailed)
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "StartError" || term.ExitCode != 128 || !strings.Contains(term.Message, "/nonexistent/program") {
		t.Errorf("status = %s", describeStatus(got))
	}
}
