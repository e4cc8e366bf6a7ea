package sidecar

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestNamed(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "setup"},
			{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
		},
		Containers: []corev1.Container{{Name: "main"}},
	}
	for name, want := range map[string]bool{"setup": false, "proxy": true, "main": false, "absent": false} {
		if got := Named(spec, name); got != want {
			t.Errorf("Named(%q) = %v, want %v", name, got, want)
		}
	}
}
