package node

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestGPUEnv(t *testing.T) {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{resourceNvidiaGPU: resource.MustParse(n)}
	}
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		want      []envVar
	}{
		{"none", corev1.ResourceRequirements{}, nil},
		{"zero", corev1.ResourceRequirements{Limits: gpus("0")}, nil},
		{"one by limit", corev1.ResourceRequirements{Limits: gpus("1")},
			[]envVar{{"NVIDIA_VISIBLE_DEVICES", "0"}}},
		{"two by request", corev1.ResourceRequirements{Requests: gpus("2")},
			[]envVar{{"NVIDIA_VISIBLE_DEVICES", "0,1"}}},
		{"the limit wins", corev1.ResourceRequirements{Limits: gpus("3"), Requests: gpus("1")},
			[]envVar{{"NVIDIA_VISIBLE_DEVICES", "0,1,2"}}},
	}
	for _, tc := range tests {
		if got := gpuEnv(&corev1.Container{Resources: tc.resources}); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
