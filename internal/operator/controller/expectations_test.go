package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name, uid string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestExpectations(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := jobRef{key: types.NamespacedName{Namespace: "ns", Name: "j"}, uid: "u1"}
	tests := []struct {
		name    string
		creates []*corev1.Pod
		deletes []*corev1.Pod
		cached  []*corev1.Pod
		at      time.Time
		want    bool
	}{
		{name: "nothing expected", want: true, at: t0},
		{name: "created pod not in the cache yet", creates: []*corev1.Pod{pod("j-worker-0", "", false)}, at: t0, want: false},
		{name: "created pod in the cache", creates: []*corev1.Pod{pod("j-worker-0", "", false)},
			cached: []*corev1.Pod{pod("j-worker-0", "p1", false)}, at: t0, want: true},
		{name: "one of two created pods seen", creates: []*corev1.Pod{pod("j-worker-0", "", false), pod("j-worker-1", "", false)},
			cached: []*corev1.Pod{pod("j-worker-0", "p1", false)}, at: t0, want: false},
		{name: "deleted pod still live in the cache", deletes: []*corev1.Pod{pod("j-worker-2", "p3", false)},
			cached: []*corev1.Pod{pod("j-worker-2", "p3", false)}, at: t0, want: false},
		{name: "deleted pod terminating in the cache", deletes: []*corev1.Pod{pod("j-worker-2", "p3", false)},
			cached: []*corev1.Pod{pod("j-worker-2", "p3", true)}, at: t0, want: true},
		{name: "deleted pod gone; a new pod of the same name is another pod", deletes: []*corev1.Pod{pod("j-worker-2", "p3", false)},
			cached: []*corev1.Pod{pod("j-worker-2", "p4", false)}, at: t0, want: true},
		{name: "an expectation never met expires", creates: []*corev1.Pod{pod("j-worker-0", "", false)},
			at: t0.Add(expectationTimeout + time.Second), want: true},
	}
	for _, tc := range tests {
		e := newExpectations()
		e.expectCreates(job, tc.creates, t0)
		e.expectDeletes(job, tc.deletes, t0)
		if got := e.satisfied(job, tc.cached, tc.at); got != tc.want {
			t.Errorf("%s: satisfied = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestExpectationsOfARecreatedJobStartAfresh(t *testing.T) {
	t0 := time.Now()
	key := types.NamespacedName{Namespace: "ns", Name: "j"}
	e := newExpectations()
	e.expectCreates(jobRef{key, "old"}, []*corev1.Pod{pod("j-worker-0", "", false)}, t0)
	if !e.satisfied(jobRef{key, "new"}, nil, t0) {
		t.Error("a new job of the same name waits for the old one's pods")
	}
	e.expectCreates(jobRef{key, "new"}, []*corev1.Pod{pod("j-worker-0", "", false)}, t0)
	e.forget(key)
	if !e.satisfied(jobRef{key, "new"}, nil, t0) {
		t.Error("forget kept the expectations")
	}
}
