package node

import (
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
