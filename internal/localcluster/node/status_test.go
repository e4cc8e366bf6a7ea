package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
