package node

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseMemTotal(t *testing.T) {
	got, err := parseMemTotal([]byte("MemFree:  100 kB\nMemTotal:       24576000 kB\n"))
	if err != nil || got != 24576000*1024 {
		t.Errorf("got %d, %v", got, err)
	}
	if _, err := parseMemTotal([]byte("MemFree: 1 kB\n")); err == nil {
		t.Error("no MemTotal accepted")
	}
}

func TestNodeObject(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("500")}
	n := nodeObject("paddlejob-node", "127.0.0.1", 10250, capacity, corev1.NodeSystemInfo{KubeletVersion: "v1.35.4"})
	if n.Labels[corev1.LabelHostname] != "paddlejob-node" || n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("node = %+v", n)
	}
	if n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}) {
		t.Errorf("addresses = %v", n.Status.Addresses)
	}
	if !n.Status.Allocatable.Pods().Equal(resource.MustParse("500")) {
		t.Errorf("allocatable = %v", n.Status.Allocatable)
	}
	ready := func() corev1.NodeCondition {
		c, _ := findNodeCondition(n, corev1.NodeReady)
		return c
	}
	if ready().Status != corev1.ConditionFalse {
		t.Errorf("a starting node is %s", ready().Status)
	}
	setNodeReady(n, metav1.Now())
	if c := ready(); c.Status != corev1.ConditionTrue || c.Reason != "KubeletReady" {
		t.Errorf("Ready = %+v", c)
	}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady && c.Status != corev1.ConditionFalse {
			t.Errorf("pressure condition %s = %s", c.Type, c.Status)
		}
	}
}

// TestNodeCapacityOfAnUnreadableHostIsAnError: when the host's capacity
// cannot be read, nodeCapacity returns the error rather than panicking as it
// writes the overrides into the nil capacity (it once did).
func TestNodeCapacityOfAnUnreadableHostIsAnError(t *testing.T) {
	over := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
	if got, err := nodeCapacity(10, "/nonexistent/state", over); err == nil {
		t.Errorf("capacity %v and no error for a state directory that cannot be read", got)
	}
}

func TestNodeCapacity(t *testing.T) {
	over := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("64")}
	got, err := nodeCapacity(10, t.TempDir(), over)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Cpu().Equal(resource.MustParse("64")) || !got.Pods().Equal(resource.MustParse("10")) || got.Memory().IsZero() {
		t.Errorf("capacity %v", got)
	}
	if q := got["nvidia.com/gpu"]; !q.Equal(resource.MustParse("4")) {
		t.Errorf("nvidia.com/gpu = %v, want 4", q.String())
	}
	for _, bad := range []corev1.ResourceList{
		{"nvidia.com/gpu": resource.MustParse("0.5")},
		{corev1.ResourceCPU: resource.MustParse("-1")},
		{"bad name!": resource.MustParse("1")},
	} {
		if err := ValidateCapacity(bad); err == nil {
			t.Errorf("capacity %v accepted", bad)
		}
	}
	if err := ValidateCapacity(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5"), "nvidia.com/gpu": resource.MustParse("0")}); err != nil {
		t.Errorf("a fractional CPU and no GPUs: %v", err)
	}
}

func TestParseNodeLabels(t *testing.T) {
	got, err := ParseNodeLabels("accelerator=nvidia-tesla-p100, example.com/zone=lab,empty=")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"accelerator": "nvidia-tesla-p100", "example.com/zone": "lab", "empty": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	if got, err := ParseNodeLabels(""); err != nil || len(got) != 0 {
		t.Errorf("no labels: %v, %v", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"accelerator", `node label "accelerator": want KEY=VALUE`},
		{"bad key!=x", `node label key "bad key!" is not valid`},
		{"k=bad value", `node label k="bad value": the value is not valid`},
		{"kubernetes.io/hostname=other", "kubernetes.io/hostname is set by the node itself"},
	} {
		if _, err := ParseNodeLabels(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseNodeLabels(%q): %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func findNodeCondition(n *corev1.Node, t corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}
