package node

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func running(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func waitingFor(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

// backingOff is a container waiting to be restarted after exiting with code.
func backingOff(name string, code int32) corev1.ContainerStatus {
	s := waitingFor(name, reasonCrashLoopBackOff)
	s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: code}
	return s
}

func specWith(policy corev1.RestartPolicy, inits []string, containers ...string) *corev1.PodSpec {
	s := &corev1.PodSpec{RestartPolicy: policy}
	for _, n := range inits {
		s.InitContainers = append(s.InitContainers, corev1.Container{Name: n})
	}
	for _, n := range containers {
		s.Containers = append(s.Containers, corev1.Container{Name: n})
	}
	return s
}

func TestPodPhase(t *testing.T) {
	never, onFailure, always := corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways
	type statuses = []corev1.ContainerStatus
	tests := []struct {
		name     string
		spec     *corev1.PodSpec
		inits    statuses
		main     statuses
		terminal bool
		want     corev1.PodPhase
	}{
		{"creating", specWith(never, nil, "a"), nil, statuses{waitingFor("a", reasonContainerCreating)}, false, corev1.PodPending},
		{"init running", specWith(never, []string{"i"}, "a"), statuses{running("i")}, statuses{waitingFor("a", reasonPodInitializing)}, false, corev1.PodPending},
		{"init failed, Never", specWith(never, []string{"i"}, "a"), statuses{exited("i", 1)}, statuses{waitingFor("a", reasonPodInitializing)}, false, corev1.PodFailed},
		{"init failed, OnFailure retries", specWith(onFailure, []string{"i"}, "a"), statuses{backingOff("i", 1)}, statuses{waitingFor("a", reasonPodInitializing)}, false, corev1.PodPending},
		{"init done, container waiting", specWith(never, []string{"i"}, "a"), statuses{exited("i", 0)}, statuses{waitingFor("a", reasonConfigError)}, false, corev1.PodPending},
		{"running", specWith(never, nil, "a", "b"), nil, statuses{running("a"), running("b")}, false, corev1.PodRunning},
		{"one done, one running", specWith(never, nil, "a", "b"), nil, statuses{exited("a", 0), running("b")}, false, corev1.PodRunning},
		{"all succeeded", specWith(never, nil, "a", "b"), nil, statuses{exited("a", 0), exited("b", 0)}, false, corev1.PodSucceeded},
		{"one failed, Never", specWith(never, nil, "a", "b"), nil, statuses{exited("a", 0), exited("b", 3)}, false, corev1.PodFailed},
		{"failed, OnFailure restarts", specWith(onFailure, nil, "a"), nil, statuses{backingOff("a", 3)}, false, corev1.PodRunning},
		{"succeeded, OnFailure", specWith(onFailure, nil, "a"), nil, statuses{exited("a", 0)}, false, corev1.PodSucceeded},
		{"exited, Always restarts", specWith(always, nil, "a"), nil, statuses{exited("a", 0)}, false, corev1.PodRunning},
		{"stopped while running", specWith(always, nil, "a"), nil, statuses{exited("a", 143)}, true, corev1.PodFailed},
		{"stopped after success", specWith(always, nil, "a"), nil, statuses{exited("a", 0)}, true, corev1.PodSucceeded},
		{"stopped while waiting", specWith(never, nil, "a"), nil, statuses{waitingFor("a", reasonConfigError)}, true, corev1.PodFailed},
		{"stopped during init", specWith(never, []string{"i"}, "a"), statuses{exited("i", 137)}, statuses{waitingFor("a", reasonPodInitializing)}, true, corev1.PodFailed},
		{"no status yet", specWith(never, nil, "a"), nil, nil, false, corev1.PodPending},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podPhase(tc.spec, tc.inits, tc.main, tc.terminal); got != tc.want {
				t.Errorf("phase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBuildPodStatus(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	spec := specWith(corev1.RestartPolicyNever, []string{"i"}, "a")
	spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	base := corev1.PodStatus{
		QOSClass: corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
			{Type: "example.com/gate", Status: corev1.ConditionTrue},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		},
	}
	s := buildPodStatus(statusInput{
		Spec: spec, Base: base,
		InitStatuses: []corev1.ContainerStatus{exited("i", 0)},
		Statuses:     []corev1.ContainerStatus{running("a")},
		PodIPs:       []string{"127.0.1.9"}, HostIPs: []string{"127.0.0.1"},
		StartTime: &earlier, SandboxReady: true, Now: now,
	})
	if s.Phase != corev1.PodRunning || s.PodIP != "127.0.1.9" || s.HostIP != "127.0.0.1" || len(s.PodIPs) != 1 || s.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("status = %+v", s)
	}
	want := map[corev1.PodConditionType]corev1.ConditionStatus{
		corev1.PodScheduled: corev1.ConditionTrue, "example.com/gate": corev1.ConditionTrue,
		corev1.PodReadyToStartContainers: corev1.ConditionTrue, corev1.PodInitialized: corev1.ConditionTrue,
		corev1.ContainersReady: corev1.ConditionTrue, corev1.PodReady: corev1.ConditionTrue,
	}
	if len(s.Conditions) != len(want) {
		t.Errorf("conditions = %+v", s.Conditions)
	}
	for _, c := range s.Conditions {
		if want[c.Type] != c.Status {
			t.Errorf("condition %s = %s, want %s", c.Type, c.Status, want[c.Type])
		}
	}
	if c, _ := findCondition(s.Conditions, corev1.PodInitialized); !c.LastTransitionTime.Equal(&earlier) {
		t.Errorf("an unchanged condition got a new transition time: %v", c.LastTransitionTime)
	}
	if c, _ := findCondition(s.Conditions, corev1.PodReady); !c.LastTransitionTime.Equal(&now) {
		t.Errorf("a new condition has transition time %v, want now", c.LastTransitionTime)
	}

	base.Conditions = base.Conditions[:1] // the gate is not met
	s = buildPodStatus(statusInput{Spec: spec, Base: base, InitStatuses: []corev1.ContainerStatus{exited("i", 0)},
		Statuses: []corev1.ContainerStatus{running("a")}, SandboxReady: true, Now: now})
	if c, _ := findCondition(s.Conditions, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "ReadinessGatesNotReady" {
		t.Errorf("Ready with an unmet gate = %+v", c)
	}

	s = buildPodStatus(statusInput{Spec: spec, InitStatuses: []corev1.ContainerStatus{exited("i", 0)},
		Statuses: []corev1.ContainerStatus{exited("a", 0)}, Now: now})
	if c, _ := findCondition(s.Conditions, corev1.ContainersReady); s.Phase != corev1.PodSucceeded || c.Reason != "PodCompleted" {
		t.Errorf("completed pod: phase %s, ContainersReady %+v", s.Phase, c)
	}

	s = buildPodStatus(statusInput{Spec: spec, InitStatuses: []corev1.ContainerStatus{exited("i", 0)},
		Statuses: []corev1.ContainerStatus{exited("a", 143)}, Terminal: true, Shutdown: true, Now: now})
	if s.Phase != corev1.PodFailed || s.Reason != reasonShutdown || s.Message != messageShutdown {
		t.Errorf("pod stopped by the node's shutdown: %s %q %q", s.Phase, s.Reason, s.Message)
	}

	base.Phase = corev1.PodSucceeded
	s = buildPodStatus(statusInput{Spec: spec, Base: base, Shutdown: true, Now: now})
	if s.Phase != corev1.PodSucceeded {
		t.Errorf("a terminal phase changed to %s", s.Phase)
	}
}

// sidecarStatus is a sidecar running, started or not (its startup probe
// pending), ready once started.
func sidecarStatus(name string, started bool) corev1.ContainerStatus {
	s := running(name)
	s.Started, s.Ready = ptr.To(started), started
	return s
}

// withSidecars makes the named init containers of spec sidecars.
func withSidecars(spec *corev1.PodSpec, names ...string) *corev1.PodSpec {
	for i := range spec.InitContainers {
		if slices.Contains(names, spec.InitContainers[i].Name) {
			spec.InitContainers[i].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
	}
	return spec
}

// The phase of a pod with sidecars, "s" (and "s2"), before a regular init
// container "i" or alone, and a container "a": the sidecars hold the pod in
// Pending until they started, keep it Running while they run, and their own
// end never decides it.
func TestPodPhaseWithSidecars(t *testing.T) {
	never, onFailure := corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure
	type statuses = []corev1.ContainerStatus
	spec := func(policy corev1.RestartPolicy, inits ...string) *corev1.PodSpec {
		return withSidecars(specWith(policy, inits, "a"), "s", "s2")
	}
	initializing := statuses{waitingFor("a", reasonPodInitializing)}
	tests := []struct {
		name     string
		spec     *corev1.PodSpec
		inits    statuses
		main     statuses
		terminal bool
		want     corev1.PodPhase
	}{
		{"sidecar not started yet", spec(never, "s", "i"), statuses{sidecarStatus("s", false), waitingFor("i", reasonPodInitializing)}, initializing, false, corev1.PodPending},
		{"sidecar started, init container runs", spec(never, "s", "i"), statuses{sidecarStatus("s", true), running("i")}, initializing, false, corev1.PodPending},
		{"sidecar crash-looping before it started", spec(never, "s"), statuses{backingOff("s", 1)}, initializing, false, corev1.PodPending},
		{"initialized, container creating", spec(never, "s"), statuses{sidecarStatus("s", true)}, statuses{waitingFor("a", reasonContainerCreating)}, false, corev1.PodPending},
		{"sidecar beside a running container", spec(never, "s"), statuses{sidecarStatus("s", true)}, statuses{running("a")}, false, corev1.PodRunning},
		{"sidecar restarting beside a running container", spec(never, "s"), statuses{backingOff("s", 1)}, statuses{running("a")}, false, corev1.PodRunning},
		{"sidecar restarted, startup probe pending", spec(never, "s"), statuses{sidecarStatus("s", false)}, statuses{running("a")}, false, corev1.PodRunning},
		{"container done, sidecar still running", spec(never, "s"), statuses{sidecarStatus("s", true)}, statuses{exited("a", 0)}, false, corev1.PodRunning},
		{"container succeeded, sidecars stopped", spec(never, "s", "s2"), statuses{exited("s", 143), exited("s2", 137)}, statuses{exited("a", 0)}, false, corev1.PodSucceeded},
		{"container failed, sidecar stopped", spec(never, "s"), statuses{exited("s", 143)}, statuses{exited("a", 1)}, false, corev1.PodFailed},
		{"OnFailure, container succeeded, sidecar stopped", spec(onFailure, "s"), statuses{exited("s", 1)}, statuses{exited("a", 0)}, false, corev1.PodSucceeded},
		{"sidecar left in back-off once the container succeeded", spec(never, "s"), statuses{backingOff("s", 1)}, statuses{exited("a", 0)}, false, corev1.PodSucceeded},
		{"init container failed under Never, sidecar being stopped", spec(never, "s", "i"), statuses{sidecarStatus("s", true), exited("i", 1)}, initializing, false, corev1.PodPending},
		{"init container failed under Never, sidecar stopped", spec(never, "s", "i"), statuses{exited("s", 143), exited("i", 1)}, initializing, false, corev1.PodFailed},
		{"init container failed under OnFailure, retried", spec(onFailure, "s", "i"), statuses{sidecarStatus("s", true), backingOff("i", 1)}, initializing, false, corev1.PodPending},
		{"deleted while running", spec(never, "s"), statuses{exited("s", 143)}, statuses{exited("a", 143)}, true, corev1.PodFailed},
		{"deleted after the container succeeded", spec(never, "s"), statuses{exited("s", 143)}, statuses{exited("a", 0)}, true, corev1.PodSucceeded},
		{"deleted while initializing", spec(never, "s", "i"), statuses{exited("s", 143), exited("i", 143)}, initializing, true, corev1.PodFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podPhase(tc.spec, tc.inits, tc.main, tc.terminal); got != tc.want {
				t.Errorf("phase = %s, want %s", got, tc.want)
			}
		})
	}
}

// The conditions of a pod with a sidecar "s" before an init container "i":
// Initialized once each init container completed or (the sidecar) started,
// and for good once a container ran; ContainersReady and Ready count the
// sidecar's readiness with the containers'.
func TestConditionsWithASidecar(t *testing.T) {
	spec := withSidecars(specWith(corev1.RestartPolicyAlways, []string{"s", "i"}, "a"), "s")
	unready := func(s corev1.ContainerStatus) corev1.ContainerStatus { s.Ready = false; return s }
	type statuses = []corev1.ContainerStatus
	initializing := statuses{waitingFor("a", reasonPodInitializing)}
	tests := []struct {
		name                string
		inits, main         statuses
		wantInitialized     string // "" when True, else the message
		wantContainersReady string
	}{
		{"sidecar not started", statuses{sidecarStatus("s", false), waitingFor("i", reasonPodInitializing)}, initializing,
			"containers with incomplete status: [s i]", "containers with unready status: [s a]"},
		{"sidecar started, init container runs", statuses{sidecarStatus("s", true), running("i")}, initializing,
			"containers with incomplete status: [i]", "containers with unready status: [a]"},
		{"sidecar and container ready", statuses{sidecarStatus("s", true), exited("i", 0)}, statuses{running("a")}, "", ""},
		{"sidecar unready", statuses{unready(sidecarStatus("s", true)), exited("i", 0)}, statuses{running("a")},
			"", "containers with unready status: [s]"},
		{"sidecar restarting after the container ran", statuses{backingOff("s", 1), exited("i", 0)}, statuses{running("a")},
			"", "containers with unready status: [s]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := buildPodStatus(statusInput{Spec: spec, InitStatuses: tc.inits, Statuses: tc.main, SandboxReady: true})
			for _, want := range []struct {
				cond    corev1.PodConditionType
				message string
			}{{corev1.PodInitialized, tc.wantInitialized}, {corev1.ContainersReady, tc.wantContainersReady}, {corev1.PodReady, tc.wantContainersReady}} {
				c, _ := findCondition(s.Conditions, want.cond)
				if (c.Status == corev1.ConditionTrue) != (want.message == "") || c.Message != want.message {
					t.Errorf("%s = %s %q, want message %q", want.cond, c.Status, c.Message, want.message)
				}
			}
		})
	}
}
