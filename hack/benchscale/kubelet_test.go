package main

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestFakePodIP(t *testing.T) {
	for n, want := range map[uint32]string{0: "10.0.0.1", 1: "10.0.0.2", 255: "10.0.1.0", 1<<24 - 3: "10.255.255.254", 1<<24 - 2: "10.0.0.1"} {
		if got := fakePodIP(n); got != want {
			t.Errorf("fakePodIP(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestRunningStatusPatch(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "i"}},
		Containers:     []corev1.Container{{Name: "a", Image: "x"}, {Name: "b", Image: "y"}},
	}}
	b, err := runningStatusPatch(pod, "10.0.0.7", "10.255.0.1", time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Status corev1.PodStatus }
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	st := p.Status
	if st.Phase != corev1.PodRunning || st.PodIP != "10.0.0.7" || st.PodIPs[0].IP != "10.0.0.7" || st.HostIP != "10.255.0.1" || st.StartTime == nil {
		t.Errorf("status: %+v", st)
	}
	if len(st.ContainerStatuses) != 2 || st.ContainerStatuses[1].State.Running == nil || !st.ContainerStatuses[1].Ready {
		t.Errorf("container statuses: %+v", st.ContainerStatuses)
	}
	if len(st.InitContainerStatuses) != 1 || st.InitContainerStatuses[0].State.Terminated == nil {
		t.Errorf("init container statuses: %+v", st.InitContainerStatuses)
	}
	if len(st.Conditions) != 4 {
		t.Errorf("conditions: %+v", st.Conditions)
	}
}
