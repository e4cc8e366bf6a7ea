package node

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// foundPod is a pod as a killed node left it in the API: bound, with the
// status it last reported.
func foundPod(name string, phase corev1.PodPhase, inits, main []corev1.ContainerStatus) *corev1.Pod {
	var initNames, mainNames []string
	for _, s := range inits {
		initNames = append(initNames, s.Name)
	}
	for _, s := range main {
		mainNames = append(mainNames, s.Name)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec:       *specWith(corev1.RestartPolicyNever, initNames, mainNames...),
		Status:     corev1.PodStatus{Phase: phase, InitContainerStatuses: inits, ContainerStatuses: main},
	}
}

func TestFateAfterRestart(t *testing.T) {
	type statuses = []corev1.ContainerStatus
	wait := waitingFor(waitContainer, reasonPodInitializing)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want restartFate
	}{
		{"bound, no status yet", foundPod("a", corev1.PodPending, nil, nil), fateRunAgain},
		{"creating its containers", foundPod("a", corev1.PodPending, nil, statuses{waitingFor("main", reasonContainerCreating)}), fateRunAgain},
		{"waiting for its endpoints in the init container", foundPod("a", corev1.PodPending, statuses{running(waitContainer)}, statuses{waitingFor("main", reasonPodInitializing)}), fateRunAgain},
		{"init container not started", foundPod("a", corev1.PodPending, statuses{wait}, statuses{waitingFor("main", reasonPodInitializing)}), fateRunAgain},
		{"init container failed, waiting to retry (OnFailure)", foundPod("a", corev1.PodPending, statuses{backingOff(waitContainer, 1)}, statuses{waitingFor("main", reasonPodInitializing)}), fateRunAgain},
		{"running", foundPod("a", corev1.PodRunning, statuses{exited(waitContainer, 0)}, statuses{running("main")}), fateFail},
		{"Running with every container ended (OnFailure restarts one)", foundPod("a", corev1.PodRunning, nil, statuses{backingOff("main", 1)}), fateFail},
		{"init completed, container not started yet", foundPod("a", corev1.PodPending, statuses{exited(waitContainer, 0)}, statuses{waitingFor("main", reasonContainerCreating)}), fateFail},
		{"one container ended, the other not started", foundPod("a", corev1.PodPending, nil, statuses{exited("a", 0), waitingFor("b", reasonErrImagePull)}), fateFail},
		{"waiting to restart after a run", foundPod("a", corev1.PodPending, nil, statuses{backingOff("main", 2)}), fateFail},
		{"started, as the status says", foundPod("a", corev1.PodPending, nil, statuses{{Name: "main", Started: ptr.To(true)}}), fateFail},
		{"succeeded", foundPod("a", corev1.PodSucceeded, nil, statuses{exited("main", 0)}), fateLeave},
		{"failed", foundPod("a", corev1.PodFailed, nil, statuses{exited("main", 1)}), fateLeave},
	}
	// A sidecar, "proxy", before the endpoints wait: that it ran says
	// nothing, as it may run again.
	withProxy := func(pod *corev1.Pod) *corev1.Pod {
		withSidecars(&pod.Spec, "proxy")
		return pod
	}
	tests = append(tests, []struct {
		name string
		pod  *corev1.Pod
		want restartFate
	}{
		{"a sidecar runs beside the endpoints wait", withProxy(foundPod("a", corev1.PodPending, statuses{sidecarStatus("proxy", true), running(waitContainer)}, statuses{waitingFor("main", reasonPodInitializing)})), fateRunAgain},
		{"a sidecar exited 0 during the endpoints wait", withProxy(foundPod("a", corev1.PodPending, statuses{exited("proxy", 0), running(waitContainer)}, statuses{waitingFor("main", reasonPodInitializing)})), fateRunAgain},
		{"a sidecar runs, the endpoints wait completed", withProxy(foundPod("a", corev1.PodPending, statuses{sidecarStatus("proxy", true), exited(waitContainer, 0)}, statuses{waitingFor("main", reasonContainerCreating)})), fateFail},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fateAfterRestart(tc.pod); got != tc.want {
				t.Errorf("fateAfterRestart = %s, want %s", got, tc.want)
			}
		})
	}
}

// waitContainer names the operator's init container in these tests.
const waitContainer = "wait-for-endpoints"

func TestNodeRestartedStatus(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))
	now := metav1.NewTime(started.Add(time.Hour))
	main := running("main")
	main.State.Running.StartedAt = started
	main.ContainerID = "paddlejob://a-main-0"
	main.Started = ptr.To(true)
	flaky := backingOff("flaky", 3)
	flaky.RestartCount = 3
	pod := foundPod("a", corev1.PodRunning,
		[]corev1.ContainerStatus{exited(waitContainer, 0)},
		[]corev1.ContainerStatus{main, exited("sidecar", 0), waitingFor("late", reasonErrImagePull), flaky})
	pod.Status.PodIP, pod.Status.PodIPs = "10.244.0.150", []corev1.PodIP{{IP: "10.244.0.150"}}
	pod.Status.HostIP, pod.Status.HostIPs = DefaultNodeIP, []corev1.HostIP{{IP: DefaultNodeIP}}
	pod.Status.StartTime = &started
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: "example.com/gate", Status: corev1.ConditionTrue},
	}

	got := nodeRestartedStatus(pod, now)

	if got.Phase != corev1.PodFailed || got.Reason != reasonNodeRestarted || !strings.Contains(got.Message, "node restarted") {
		t.Errorf("phase %s, reason %q, message %q; want Failed, %s, saying the node restarted", got.Phase, got.Reason, got.Message, reasonNodeRestarted)
	}
	if got.PodIP != "10.244.0.150" || len(got.PodIPs) != 1 || got.HostIP != DefaultNodeIP || got.StartTime == nil || !got.StartTime.Equal(&started) {
		t.Errorf("addresses or start time changed: podIP %s %v, hostIP %s, start %v", got.PodIP, got.PodIPs, got.HostIP, got.StartTime)
	}
	if s := got.InitContainerStatuses[0].State.Terminated; s == nil || s.ExitCode != 0 {
		t.Errorf("the completed init container's status = %+v, want it kept", got.InitContainerStatuses[0].State)
	}
	byName := map[string]corev1.ContainerStatus{}
	for _, s := range got.ContainerStatuses {
		byName[s.Name] = s
	}
	for _, name := range []string{"main", "flaky"} {
		s := byName[name]
		term := s.State.Terminated
		if term == nil || term.ExitCode != exitCodeKilled || term.Reason != reasonNodeRestarted || !term.FinishedAt.Equal(&now) || s.Ready || ptr.Deref(s.Started, true) {
			t.Errorf("container %s = %+v, want terminated with exit code %d at %s", name, s, exitCodeKilled, now)
		}
	}
	if term := byName["main"].State.Terminated; term == nil || !term.StartedAt.Equal(&started) || term.ContainerID != "paddlejob://a-main-0" {
		t.Errorf("the killed container's run = %+v, want its start and ID kept", term)
	}
	if s := byName["flaky"]; s.RestartCount != 3 || s.LastTerminationState.Terminated == nil {
		t.Errorf("the restarted container's history = %+v, want it kept", s)
	}
	if term := byName["sidecar"].State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("the container that had ended = %+v, want its end kept", byName["sidecar"].State)
	}
	if w := byName["late"].State.Waiting; w == nil || w.Reason != reasonErrImagePull {
		t.Errorf("the container that never started = %+v, want it still waiting", byName["late"].State)
	}
	conds := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range got.Conditions {
		conds[c.Type] = c
	}
	if c := conds[corev1.PodReady]; c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" {
		t.Errorf("Ready = %+v, want False (PodCompleted)", c)
	}
	if c := conds["example.com/gate"]; c.Status != corev1.ConditionTrue {
		t.Errorf("a condition the node does not own = %+v, want it kept", c)
	}
	// The input is left as it was.
	if pod.Status.Phase != corev1.PodRunning || pod.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("nodeRestartedStatus modified the pod: %+v", pod.Status)
	}
}

// A pod whose containers had ended, kept Running by its sidecar when the
// node restarted, is not failed for the sidecar it killed: its containers
// decide. One whose container still ran fails as any other.
func TestNodeRestartedStatusWithASidecar(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tests := []struct {
		name       string
		main       corev1.ContainerStatus
		wantPhase  corev1.PodPhase
		wantReason string
	}{
		{"the container had succeeded", exited("main", 0), corev1.PodSucceeded, ""},
		{"the container had failed", exited("main", 1), corev1.PodFailed, reasonNodeRestarted},
		{"the container ran", running("main"), corev1.PodFailed, reasonNodeRestarted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := foundPod("a", corev1.PodRunning, []corev1.ContainerStatus{sidecarStatus("proxy", true)}, []corev1.ContainerStatus{tc.main})
			withSidecars(&pod.Spec, "proxy")
			got := nodeRestartedStatus(pod, now)
			if got.Phase != tc.wantPhase || got.Reason != tc.wantReason {
				t.Errorf("phase %s, reason %q; want %s, %q", got.Phase, got.Reason, tc.wantPhase, tc.wantReason)
			}
			if term := got.InitContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != exitCodeKilled {
				t.Errorf("sidecar %+v, want killed with the node (%d)", got.InitContainerStatuses[0].State, exitCodeKilled)
			}
		})
	}
}

func TestPodIPsToHold(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(time.Date(2026, 3, 1, 12, min, 0, 0, time.UTC)) }
	pod := func(name string, created metav1.Time, phase corev1.PodPhase, ip string) *corev1.Pod {
		p := foundPod(name, phase, nil, nil)
		p.CreationTimestamp = created
		p.Status.PodIP = ip
		return p
	}
	hostNet := pod("host", at(0), corev1.PodRunning, DefaultNodeIP)
	hostNet.Spec.HostNetwork = true
	pods := []*corev1.Pod{
		pod("newest", at(9), corev1.PodRunning, "10.244.0.120"),
		pod("oldest", at(1), corev1.PodPending, "10.244.0.200"),
		pod("b-same-time", at(5), corev1.PodRunning, "10.244.0.131"),
		pod("a-same-time", at(5), corev1.PodPending, "10.244.0.130"),
		pod("done", at(2), corev1.PodSucceeded, "10.244.0.140"),
		pod("failed", at(3), corev1.PodFailed, "10.244.0.141"),
		pod("no-ip-yet", at(4), corev1.PodPending, ""),
		hostNet,
	}
	var got []string
	for _, h := range podIPsToHold(pods) {
		got = append(got, h.name+"="+h.ip)
		if h.uid != h.name+"-uid" || h.namespace != "ns" {
			t.Errorf("hold %+v is not for its own pod", h)
		}
	}
	want := []string{"oldest=10.244.0.200", "a-same-time=10.244.0.130", "b-same-time=10.244.0.131", "newest=10.244.0.120"}
	if !slices.Equal(got, want) {
		t.Errorf("held %v, want %v (unfinished pods with an address of their own, oldest first)", got, want)
	}
}

func TestHeldAddresses(t *testing.T) {
	r, _ := testRange("10.244.0.100-10.244.0.120")
	a := newIPAllocator(r, DefaultNodeIP)
	for _, h := range []podIPHold{{uid: "old", ip: "10.244.0.110"}, {uid: "new", ip: "10.244.0.105"}} {
		if !a.hold(h.uid, h.ip) {
			t.Fatalf("hold(%s, %s) refused", h.uid, h.ip)
		}
	}
	for _, bad := range []struct{ uid, ip string }{
		{"other", "10.244.0.110"}, // held for another pod
		{"old", "10.244.0.111"},   // old has its address
		{"x", "10.0.0.1"},         // out of range
		{"y", "10.244.0.99"},      // not one pods are given
	} {
		if a.hold(bad.uid, bad.ip) {
			t.Errorf("hold(%s, %s) accepted", bad.uid, bad.ip)
		}
	}
	// A new pod gets none of the held addresses, even when it prefers one,
	// and next-fit goes on after the last held (the newest pod's).
	if ip, _ := a.allocate("newcomer", "10.244.0.110"); ip != "10.244.0.106" {
		t.Errorf("a new pod got %s, want 10.244.0.106", ip)
	}
	// Each pod that runs again gets its own back, whatever it prefers.
	if ip, _ := a.allocate("old", ""); ip != "10.244.0.110" {
		t.Errorf("old got %s back, want 10.244.0.110", ip)
	}
	// A claimed address is the pod's: its deletion's event does not free it
	// (the pod's runtime does, once stopped).
	a.releaseHeld("old")
	if ip, _ := a.allocate("third", "10.244.0.110"); ip == "10.244.0.110" {
		t.Error("a claimed address was freed by releaseHeld")
	}
	// An address held for a pod deleted before it ran again is free again.
	a.releaseHeld("new")
	if ip, _ := a.allocate("fourth", "10.244.0.105"); ip != "10.244.0.105" {
		t.Errorf("the unclaimed address was not freed: got %s, want 10.244.0.105", ip)
	}
}

// CreatePod of a pod that ran before the restart reports it Failed through
// virtual-kubelet's callback, runs nothing and frees its held address.
func TestCreatePodFailsAPodThatRanBeforeTheRestart(t *testing.T) {
	r, _ := testRange("10.244.0.100-10.244.0.120")
	ipam := newIPAllocator(r, DefaultNodeIP)
	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	recorder := record.NewFakeRecorder(10)
	var notified []*corev1.Pod
	p := &Provider{log: logr.Discard(), clock: clock, ipam: ipam, runtimes: map[string]*podRuntime{},
		deps:   podDeps{recorder: recorder},
		notify: func(pod *corev1.Pod) { notified = append(notified, pod) }}

	pod := foundPod("trainer", corev1.PodRunning, []corev1.ContainerStatus{exited(waitContainer, 0)}, []corev1.ContainerStatus{running("main")})
	pod.Status.PodIP = "10.244.0.110"
	if !ipam.hold(string(pod.UID), pod.Status.PodIP) {
		t.Fatal("hold refused")
	}
	if err := p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if len(p.runtimes) != 0 {
		t.Errorf("the pod runs again: %v", p.runtimes)
	}
	if len(notified) != 1 {
		t.Fatalf("%d statuses reported, want 1", len(notified))
	}
	st := notified[0].Status
	if st.Phase != corev1.PodFailed || st.Reason != reasonNodeRestarted || st.ContainerStatuses[0].State.Terminated == nil ||
		st.ContainerStatuses[0].State.Terminated.ExitCode != exitCodeKilled {
		t.Errorf("reported %+v, want Failed (%s) with the container killed (%d)", st, reasonNodeRestarted, exitCodeKilled)
	}
	if ev := <-recorder.Events; !strings.Contains(ev, "Warning "+reasonNodeRestarted) {
		t.Errorf("event %q, want a %s warning", ev, reasonNodeRestarted)
	}
	if ip, _ := ipam.allocate("next", "10.244.0.110"); ip != "10.244.0.110" {
		t.Errorf("the failed pod's address is still held: the next pod preferring it got %s", ip)
	}
}
