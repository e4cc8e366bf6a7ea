package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// A memory-backed emptyDir is its sizeLimit, else the node's default memory
// limit, else the kernel's default.
func TestMemoryVolumeSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limit    *resource.Quantity
		defaults int64
		want     int64
	}{
		{"sizeLimit", ptr.To(resource.MustParse("64Mi")), 8 << 30, 64 << 20},
		{"no sizeLimit", nil, 8 << 30, 8 << 30},
		{"no sizeLimit, no default", nil, 0, 0},
		{"zero sizeLimit", ptr.To(resource.MustParse("0")), 1 << 30, 1 << 30},
	} {
		if got := memoryVolumeSize(&corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tc.limit}, tc.defaults); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
