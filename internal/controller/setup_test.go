package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestPodEventsOfAJobAreBatched(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clock})
	defer q.ShutDown()
	h := batchedByController(time.Second)
	ctx := context.Background()

	job := testutil.MakePaddleJob("wd", "ns").Workers(2).Obj()
	pod := func(i int) *corev1.Pod {
		return newPod(job, paddlev1.ReplicaWorker, i, portRange{23000, 3}, podOptions{})
	}
	orphan := pod(1).DeepCopy()
	orphan.OwnerReferences = nil
	h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: pod(0)}, q)
	h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: pod(1), ObjectNew: pod(1)}, q)
	h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: pod(0)}, q)
	h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: orphan}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests queued before the batch period passed", n)
	}

	clock.Step(time.Second)
	got := make(chan reconcile.Request)
	go func() {
		r, _ := q.Get()
		got <- r
	}()
	select {
	case r := <-got:
		if want := (reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "wd"}}); r != want {
			t.Errorf("queued %v, want %v", r, want)
		}
		q.Done(r)
	case <-time.After(30 * time.Second):
		t.Fatal("the job was not queued after the batch period")
	}
	if n := q.Len(); n != 0 {
		t.Errorf("three events of one job queued it %d more times", n)
	}
}
