package client

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func resources(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func node(name string, allocatable corev1.ResourceList, labels map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Allocatable: allocatable}}
}

// pendingPod is a pod the scheduler reported unschedulable, asking for requests.
func pendingPod(name string, requests corev1.ResourceList) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + types.UID(name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "paddle", Resources: corev1.ResourceRequirements{Requests: requests}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 Insufficient cpu.",
		}}},
	}
}

func boundPod(node string, phase corev1.PodPhase, requests corev1.ResourceList) corev1.Pod {
	p := pendingPod("other", requests)
	p.UID = "other"
	p.Spec.NodeName, p.Status.Phase = node, phase
	return p
}

func TestExplainUnschedulable(t *testing.T) {
	local := []corev1.Node{node("paddlejob-node", resources("cpu", "2", "memory", "8Gi", "nvidia.com/gpu", "0"), map[string]string{"type": "virtual-kubelet"})}
	tests := []struct {
		name  string
		pod   func() corev1.Pod
		nodes []corev1.Node
		bound []corev1.Pod
		want  string // "" when the pod is not unschedulable
	}{
		{"more CPU than the node has", func() corev1.Pod { return pendingPod("w", resources("cpu", "5")) }, local, nil,
			"needs 5 CPU, the node has 2"},
		{"more memory and GPUs", func() corev1.Pod {
			return pendingPod("w", resources("cpu", "1", "memory", "12Gi", "nvidia.com/gpu", "4"))
		}, local, nil,
			"needs 12Gi memory, the node has 8Gi; needs 4 nvidia.com/gpu, the node has 0"},
		{"the largest of several nodes", func() corev1.Pod { return pendingPod("w", resources("cpu", "1500m")) },
			[]corev1.Node{node("a", resources("cpu", "1"), nil), node("b", resources("cpu", "1200m"), nil)}, nil,
			"needs 1.5 CPU, the largest node has 1.2"},
		{"others use the node", func() corev1.Pod { return pendingPod("w", resources("cpu", "2")) }, local,
			[]corev1.Pod{boundPod("paddlejob-node", corev1.PodRunning, resources("cpu", "1500m")), boundPod("paddlejob-node", corev1.PodSucceeded, resources("cpu", "2"))},
			"needs 2 CPU, the node has 0.5 free of 2: other pods request the rest"},
		{"a limit is the request", func() corev1.Pod {
			p := pendingPod("w", nil)
			p.Spec.Containers[0].Resources.Limits = resources("memory", "9000Mi")
			return p
		}, local, nil, "needs 8.8Gi memory, the node has 8Gi"},
		{"an init container asks more", func() corev1.Pod {
			p := pendingPod("w", resources("cpu", "1"))
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: resources("cpu", "3")}}}
			return p
		}, local, nil, "needs 3 CPU, the node has 2"},
		{"no node has the labels", func() corev1.Pod {
			p := pendingPod("w", resources("cpu", "1"))
			p.Spec.NodeSelector = map[string]string{"accelerator": "nvidia-tesla-p100"}
			return p
		}, local, nil, "its nodeSelector accelerator=nvidia-tesla-p100 matches no node"},
		{"something else: the scheduler's words", func() corev1.Pod { return pendingPod("w", resources("cpu", "1")) }, local, nil,
			"the scheduler cannot place it: 0/1 nodes are available: 1 Insufficient cpu."},
		{"not reported yet", func() corev1.Pod {
			p := pendingPod("w", resources("cpu", "5"))
			p.Status.Conditions = nil
			return p
		}, local, nil, ""},
		{"scheduled", func() corev1.Pod {
			p := pendingPod("w", resources("cpu", "5"))
			p.Spec.NodeName = "paddlejob-node"
			return p
		}, local, nil, ""},
	}
	for _, tc := range tests {
		pod := tc.pod()
		got := ExplainUnschedulable(&pod, tc.nodes, tc.bound)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("%s: %q, want no reason", tc.name, got)
		case tc.want != "" && got == nil:
			t.Errorf("%s: no reason, want %q", tc.name, tc.want)
		case got != nil && got.String() != tc.want:
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestPendingShortfallsForHints(t *testing.T) {
	pod := pendingPod("w", resources("cpu", "5", "nvidia.com/gpu", "2"))
	u := ExplainUnschedulable(&pod, []corev1.Node{node("n", resources("cpu", "2"), nil)}, nil)
	var names []string
	for _, s := range u.Shortfalls {
		names = append(names, string(s.Resource)+"="+s.Needed.String())
	}
	if strings.Join(names, ",") != "cpu=5,nvidia.com/gpu=2" {
		t.Errorf("shortfalls %v", names)
	}
}

func TestLocalClusterHint(t *testing.T) {
	local := []corev1.Node{node(LocalNodeName, resources("cpu", "2", "memory", "8Gi", "nvidia.com/gpu", "0"), nil)}
	running := []corev1.Pod{boundPod(LocalNodeName, corev1.PodRunning, resources("cpu", "1"))}
	var us []Unschedulable
	for _, name := range []string{"w-0", "w-1"} {
		p := pendingPod(name, resources("cpu", "2", "memory", "5Gi", "nvidia.com/gpu", "1"))
		p.Spec.NodeSelector = nil
		us = append(us, *ExplainUnschedulable(&p, local, running))
	}
	// 1 CPU requested already and 2 for each pod; 5Gi of memory each fits
	// the node, but not both.
	want := "paddlejob up --capacity cpu=5,memory=10Gi --gpus 2"
	if got := LocalClusterHint(us); !strings.HasSuffix(got, want) {
		t.Errorf("hint %q, want it to end with %q", got, want)
	}
	sel := pendingPod("w", resources("cpu", "1"))
	sel.Spec.NodeSelector = map[string]string{"accelerator": "nvidia-tesla-p100"}
	if got := LocalClusterHint([]Unschedulable{*ExplainUnschedulable(&sel, local, nil)}); !strings.HasSuffix(got, "paddlejob up --node-labels accelerator=nvidia-tesla-p100") {
		t.Errorf("hint %q", got)
	}
	other := us[0]
	other.Node = "node-1"
	if got := LocalClusterHint([]Unschedulable{other}); got != "" {
		t.Errorf("hint %q for another cluster's node", got)
	}
	// 1000 CPUs and a half on a node of 2: whole cores, and no overcommit
	// of 500 times the machine.
	half := pendingPod("h", resources("cpu", "500m"))
	if got := LocalClusterHint([]Unschedulable{*ExplainUnschedulable(&half, local, []corev1.Pod{boundPod(LocalNodeName, corev1.PodRunning, resources("cpu", "2"))})}); !strings.HasSuffix(got, "paddlejob up --capacity cpu=3") {
		t.Errorf("hint %q, want whole CPUs", got)
	}
	huge := pendingPod("w", resources("cpu", "1000"))
	if got, want := LocalClusterHint([]Unschedulable{*ExplainUnschedulable(&huge, local, running)}), "the pods ask for 1001 CPU in all, this machine has 2: lower the job's requests"; !strings.HasPrefix(got, want) {
		t.Errorf("hint %q, want it to start with %q", got, want)
	}
	if got := LocalClusterHint([]Unschedulable{{Pod: "w", Message: "taints", Node: LocalNodeName}}); got != "" {
		t.Errorf("hint %q for a reason capacity does not fix", got)
	}
}

// A pod's requests count its sidecars (init containers with restartPolicy
// Always) as the scheduler does: they run beside the containers, and beside
// each init container declared after them.
func TestPodRequestsWithSidecars(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	container := func(name, cpu string) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: resources("cpu", cpu)}}
	}
	sidecar := func(name, cpu string) corev1.Container {
		c := container(name, cpu)
		c.RestartPolicy = &always
		return c
	}
	tests := []struct {
		name       string
		inits      []corev1.Container
		containers []corev1.Container
		want       string
	}{
		{"containers only", nil, []corev1.Container{container("a", "1"), container("b", "500m")}, "1500m"},
		{"a larger init container", []corev1.Container{container("setup", "3")}, []corev1.Container{container("a", "1")}, "3"},
		{"a sidecar adds to the containers", []corev1.Container{sidecar("proxy", "250m")}, []corev1.Container{container("a", "1")}, "1250m"},
		{"an init container after a sidecar runs beside it", []corev1.Container{sidecar("proxy", "1"), container("setup", "3")}, []corev1.Container{container("a", "1")}, "4"},
		{"an init container before a sidecar does not", []corev1.Container{container("setup", "3"), sidecar("proxy", "1")}, []corev1.Container{container("a", "1")}, "3"},
		{"sidecars add up", []corev1.Container{sidecar("p1", "1"), sidecar("p2", "2"), container("setup", "2")}, []corev1.Container{container("a", "1")}, "5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tc.inits, Containers: tc.containers}}
			got := PodRequests(pod)[corev1.ResourceCPU]
			if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
				t.Errorf("cpu request %s, want %s", got.String(), want.String())
			}
		})
	}
}
