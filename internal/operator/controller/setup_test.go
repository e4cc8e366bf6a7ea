package controller

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/paddlefailure"
	"github.com/paddlejob/paddlejob/internal/sidecar"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// delayRecorder records AddAfter; any other use of the queue panics (nil
// embedded interface), so an immediate Add would fail the test.
type delayRecorder struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []reconcile.Request
	after []time.Duration
}

func (q *delayRecorder) AddAfter(r reconcile.Request, d time.Duration) {
	q.added = append(q.added, r)
	q.after = append(q.after, d)
}

// Every pod event enqueues the controlling job after the batch period; the
// delaying queue keeps one waiting item per job, so they make one pass.
func TestPodEventsEnqueueTheirJobAfterTheBatchPeriod(t *testing.T) {
	q := &delayRecorder{}
	h := batchedByController(time.Second)
	ctx := context.Background()

	job := testutil.MakePaddleJob("wd", "ns").Workers(2).Obj()
	pod := func(i int) *corev1.Pod {
		return newPod(job, paddlev1.ReplicaWorker, i, podcontract.PortRange{First: 23000, Count: 3}, podOptions{})
	}
	orphan := pod(1).DeepCopy()
	orphan.OwnerReferences = nil
	h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: pod(0)}, q)
	h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: pod(1), ObjectNew: pod(1)}, q)
	h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: pod(0)}, q)
	h.Generic(ctx, event.TypedGenericEvent[client.Object]{Object: pod(1)}, q)
	h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: orphan}, q)

	want := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "wd"}}
	if len(q.added) != 4 {
		t.Fatalf("enqueued %v, want the job once per owned pod's event (4)", q.added)
	}
	for i, r := range q.added {
		if r != want || q.after[i] != time.Second {
			t.Errorf("event %d enqueued %v after %s, want %v after 1s", i, r, q.after[i], want)
		}
	}
}

// A job whose passes keep failing (an API server outage) is retried at
// least every MaxRetryDelay, however many failures it met.
func TestRetriesWaitAtMostAMinute(t *testing.T) {
	l := newRateLimiter()
	job := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}}
	var last time.Duration
	for range 40 {
		last = l.When(job)
		if last > MaxRetryDelay {
			t.Fatalf("retry after %s, over %s", last, MaxRetryDelay)
		}
	}
	if last != MaxRetryDelay {
		t.Errorf("after 40 failures the retry waits %s, want the cap %s", last, MaxRetryDelay)
	}
	l.Forget(job)
	if d := l.When(job); d > time.Second {
		t.Errorf("after Forget the retry waits %s", d)
	}
}

// The cache keeps of a pod what the operator reads of observed pods — its
// metadata, node, status, which init containers are sidecars, the names of
// the variables, the mounts and volumes — and drops the environment's values,
// commands and arguments it only writes, a third of the pod.
func TestStripPodForCache(t *testing.T) {
	job := testutil.MakePaddleJob("g", "ns").PS(1).Workers(1).WithGloo(1).Obj()
	opts := DefaultOptions()
	opts.Progress.URL = "http://127.0.0.1:9444"
	built := FirstPods(job, opts)[paddlev1.ReplicaPS]
	pod := testutil.WrapPod(built.DeepCopy()).Scheduled("n").Running("10.0.0.1").Obj()
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "paddlejob-operator"}}
	before, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}

	obj, err := stripPodForCache(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*corev1.Pod)
	after, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Labels, pod.Labels) || !reflect.DeepEqual(got.Annotations, pod.Annotations) ||
		!reflect.DeepEqual(got.OwnerReferences, pod.OwnerReferences) || !reflect.DeepEqual(got.Status, pod.Status) ||
		got.Spec.NodeName != "n" || got.ManagedFields != nil {
		t.Errorf("the cached pod lost what the operator reads:\n%s", after)
	}
	var sidecars []string
	for _, c := range got.Spec.InitContainers {
		if sidecar.Named(&got.Spec, c.Name) {
			sidecars = append(sidecars, c.Name)
		}
	}
	if len(sidecars) != 1 {
		t.Errorf("sidecars %q; want the Gloo store", sidecars)
	}
	if got.Spec.Volumes == nil || paddlefailure.Mode(got) != paddlefailure.ModePS {
		t.Errorf("the cached pod lost its volumes or its job's mode:\n%s", after)
	}
	for i, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		built := append(pod.Spec.InitContainers, pod.Spec.Containers...)[i]
		if len(c.Env) != len(built.Env) || !reflect.DeepEqual(c.VolumeMounts, built.VolumeMounts) || c.Command != nil || c.Args != nil {
			t.Errorf("container %s: want its variables' names and mounts, no command or arguments", c.Name)
		}
		for _, e := range c.Env {
			if e.Value != "" || e.ValueFrom != nil {
				t.Errorf("container %s keeps the value of %s", c.Name, e.Name)
			}
		}
	}
	if 4*len(after) > 3*len(before) {
		t.Errorf("the cached pod is %d of %d bytes; want under three quarters", len(after), len(before))
	}
}
