package localcluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A node is ready for pods once it reports Ready and the controller manager
// has lifted the taints it puts on a node not (yet) seen Ready; a taint of
// the user's own (a cordon) does not hold it.
func TestNodeReady(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	taint := func(key string) []corev1.Taint {
		return []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoSchedule}}
	}
	tests := []struct {
		name       string
		conditions []corev1.NodeCondition
		taints     []corev1.Taint
		wantErr    string
	}{
		{"ready", ready, nil, ""},
		{"not ready", notReady, nil, "node n is not Ready"},
		{"ready, not-ready taint still on", ready, taint(corev1.TaintNodeNotReady), "keeps the taint node.kubernetes.io/not-ready"},
		{"ready, unreachable taint still on", ready, taint(corev1.TaintNodeUnreachable), "keeps the taint node.kubernetes.io/unreachable"},
		{"ready and cordoned", ready, taint(corev1.TaintNodeUnschedulable), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
				Spec: corev1.NodeSpec{Taints: tc.taints}, Status: corev1.NodeStatus{Conditions: tc.conditions}})
			err := nodeReadyWith(context.Background(), cs, "n")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("nodeReadyWith: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
