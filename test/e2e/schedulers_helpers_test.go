package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The steps of gangWaitsForRoom (schedulers_test.go).

// startBlocker starts in ns a pod, "blocker", that requests blockerCPU,
// deleted when the test ends, and waits for it to run.
func startBlocker(t testing.TB, pj *client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	cs := pj.Clientset()
	blocker := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "blocker", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(blockerCPU)}}}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, blocker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Pods(ns).Delete(ctx, "blocker", metav1.DeleteOptions{}) })
	poll(t, time.Minute, "the blocker runs", func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "blocker", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return started(p), string(p.Status.Phase)
	})
}

// waitForTheGangTurnedDown waits for the gang scheduler to have seen the
// job name's group and turned it down: Volcano keeps its PodGroup Pending
// and Unschedulable; Coscheduling has every pod unschedulable.
func waitForTheGangTurnedDown(t testing.TB, pj *client.Client, dyn dynamic.Interface, ns, name, schedulerName string, podGroups schema.GroupVersionResource) {
	t.Helper()
	ctx := context.Background()
	switch schedulerName {
	case localcluster.VolcanoSchedulerName:
		// Volcano keeps the group Pending (not Inqueue) and says why; the
		// operator creates no pod before it is Inqueue.
		poll(t, time.Minute, "Volcano turns the group down", func() (bool, string) {
			pg, err := dyn.Resource(podGroups).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
			conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "conditions")
			for _, c := range conds {
				c := c.(map[string]any)
				if c["type"] == "Unschedulable" && c["status"] == "True" && phase == "Pending" {
					return true, fmt.Sprint(c["message"])
				}
			}
			return false, fmt.Sprintf("phase %q, conditions %v", phase, conds)
		})
	default:
		// Coscheduling has every pod of the group unschedulable.
		poll(t, time.Minute, "Coscheduling turns every pod down", func() (bool, string) {
			pods, err := pj.Pods(ctx, ns, name)
			if err != nil {
				return false, err.Error()
			}
			var states []string
			for _, p := range pods {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
						states = append(states, p.Name+": "+c.Message)
					}
				}
			}
			return len(states) == gangPods, strings.Join(states, "; ")
		})
	}
}

// checkBoundByAfter checks that each of pods was scheduled by
// schedulerName after freed, when the blocker was deleted, and returns
// when each was bound.
func checkBoundByAfter(t testing.TB, pj *client.Client, ns string, pods []corev1.Pod, schedulerName string, freed time.Time) []time.Time {
	t.Helper()
	var bound []time.Time
	for _, p := range pods {
		if by := scheduledBy(t, pj, ns, p.Name); by != schedulerName {
			t.Errorf("%s was scheduled by %q, want %q", p.Name, by, schedulerName)
		}
		scheduled := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				scheduled = true
				if c.LastTransitionTime.Time.Before(freed.Truncate(time.Second)) {
					t.Errorf("%s was bound at %s, before the blocker was deleted at %s", p.Name, c.LastTransitionTime, freed)
				}
			}
		}
		if !scheduled {
			t.Errorf("%s has no PodScheduled condition", p.Name)
		}
		bound = append(bound, scheduledAt(t, pj, ns, p.Name))
	}
	return bound
}
