package node

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEvictionMessage(t *testing.T) {
	mi := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	emptyDir := func(name string, limit *resource.Quantity, medium corev1.StorageMedium) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: limit, Medium: medium}}}
	}
	container := func(name, limit string) corev1.Container {
		c := corev1.Container{Name: name}
		if limit != "" {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(limit)}
		}
		return c
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		use  storageUsage
		want string
	}{
		{"an emptyDir within its limit", corev1.PodSpec{Volumes: []corev1.Volume{emptyDir("x", mi("10Mi"), "")}},
			storageUsage{volumes: map[string]int64{"x": 10 << 20}}, ""},
		{"an emptyDir past its limit", corev1.PodSpec{Volumes: []corev1.Volume{emptyDir("x", mi("10Mi"), "")}},
			storageUsage{volumes: map[string]int64{"x": 201 << 20}}, `Usage of EmptyDir volume "x" exceeds the limit "10Mi". `},
		{"an emptyDir without a limit", corev1.PodSpec{Volumes: []corev1.Volume{emptyDir("x", nil, "")}},
			storageUsage{volumes: map[string]int64{"x": 1 << 40}}, ""},
		{"containers within their limits", corev1.PodSpec{Containers: []corev1.Container{container("a", "1Gi"), container("b", "")}},
			storageUsage{containers: map[string]int64{"a": 512 << 20, "b": 100 << 20}}, ""},
		{"a container without a limit counted in the pod's", corev1.PodSpec{Containers: []corev1.Container{container("a", "1Gi"), container("b", "")}},
			storageUsage{containers: map[string]int64{"a": 512 << 20, "b": 2 << 30}}, "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. "},
		{"the pod past the sum of its containers' limits, volumes counted", corev1.PodSpec{
			Volumes:    []corev1.Volume{emptyDir("x", nil, ""), emptyDir("m", nil, corev1.StorageMediumMemory)},
			Containers: []corev1.Container{container("a", "1Gi"), container("b", "1Gi")}},
			storageUsage{volumes: map[string]int64{"x": 1 << 30, "m": 4 << 30}, containers: map[string]int64{"a": 600 << 20, "b": 600 << 20}},
			"Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. "},
		{"a memory-backed volume does not count against the disk", corev1.PodSpec{
			Volumes:    []corev1.Volume{emptyDir("m", nil, corev1.StorageMediumMemory)},
			Containers: []corev1.Container{container("a", "1Gi")}},
			storageUsage{volumes: map[string]int64{"m": 4 << 30}, containers: map[string]int64{"a": 1 << 20}}, ""},
		{"one container past its own limit, the pod within the sum", corev1.PodSpec{
			Containers: []corev1.Container{container("a", "1Gi"), container("b", "3Gi")}},
			storageUsage{containers: map[string]int64{"a": 2 << 30, "b": 0}}, `Container a exceeded its local ephemeral storage limit "1Gi". `},
		{"the emptyDir's limit is checked first", corev1.PodSpec{
			Volumes:    []corev1.Volume{emptyDir("x", mi("10Mi"), "")},
			Containers: []corev1.Container{container("a", "1Mi")}},
			storageUsage{volumes: map[string]int64{"x": 20 << 20}, containers: map[string]int64{"a": 2 << 20}}, `Usage of EmptyDir volume "x" exceeds the limit "10Mi". `},
	} {
		if got := evictionMessage(&tc.spec, tc.use); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDiskUsageCountsBlocksOnceAndFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "a-again")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "big"), append(data, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got := diskUsage(dir)
	if got < 1<<20 || got >= 2<<20 {
		t.Errorf("diskUsage = %d, want the one MiB file once (hard link counted once, the link's target not at all)", got)
	}
	if got := diskUsage(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("diskUsage of a missing directory = %d, want 0", got)
	}
}

func TestEvictedPodStatus(t *testing.T) {
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{Name: "c"}}}
	msg := `Usage of EmptyDir volume "x" exceeds the limit "10Mi". `
	s := buildPodStatus(statusInput{Spec: spec, Evicted: msg, Now: metav1.Now(),
		Statuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}})
	if s.Phase != corev1.PodFailed || s.Reason != "Evicted" || s.Message != msg {
		t.Errorf("an evicted pod's status: %s %q %q, want Failed, Evicted and the message", s.Phase, s.Reason, s.Message)
	}
}
