package controller

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
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

// The cache keeps of a pod what the operator reads of observed pods: of a
// running pod its metadata, node, status, containers' names and which init
// containers are sidecars, a fifth of it; of a pod with a failed container
// also what its failure's explanation reads — the names of the variables,
// the mounts and volumes — but never the environment's values, commands and
// arguments the operator only writes.
func TestStripPodForCache(t *testing.T) {
	job := testutil.MakePaddleJob("g", "ns").PS(1).Workers(1).WithGloo(1).Obj()
	opts := DefaultOptions()
	opts.Progress.URL = "http://127.0.0.1:9444"
	built := FirstPods(job, opts)[paddlev1.ReplicaPS]
	running := testutil.WrapPod(built.DeepCopy()).Scheduled("n").Running("10.0.0.1").Obj()
	failed := testutil.WrapPod(built.DeepCopy()).Scheduled("n").Failed("paddle", 1).Obj()
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		explain bool // keeps what the failure explanations read
		share   int  // at most this many twentieths of the pod stay
	}{
		{"running", running, false, 4},
		{"failed", failed, true, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "paddlejob-operator"}}
			before := mustJSON(t, pod)
			obj, err := stripPodForCache(pod.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			got := obj.(*corev1.Pod)
			after := mustJSON(t, got)
			if !reflect.DeepEqual(got.Labels, pod.Labels) || !reflect.DeepEqual(got.Annotations, pod.Annotations) ||
				!reflect.DeepEqual(got.OwnerReferences, pod.OwnerReferences) || !reflect.DeepEqual(got.Status, pod.Status) ||
				got.Spec.NodeName != "n" || got.ManagedFields != nil {
				t.Errorf("the cached pod lost what the operator reads:\n%s", after)
			}
			checkCachedContainers(t, pod, got, tc.explain)
			if 20*len(after) > tc.share*len(before) {
				t.Errorf("the cached pod is %d of %d bytes; want at most %d twentieths", len(after), len(before), tc.share)
			}
		})
	}
}

// checkCachedContainers checks a cached pod's containers against the pod's:
// the same names and sidecars, no values, commands or arguments, and the
// variables' names, mounts and volumes if explain.
func checkCachedContainers(t *testing.T, pod, got *corev1.Pod, explain bool) {
	t.Helper()
	var sidecars []string
	for _, c := range got.Spec.InitContainers {
		if sidecar.Named(&got.Spec, c.Name) {
			sidecars = append(sidecars, c.Name)
		}
	}
	if len(sidecars) != 1 {
		t.Errorf("sidecars %q; want the Gloo store", sidecars)
	}
	if explain && (got.Spec.Volumes == nil || paddlefailure.Mode(got) != paddlefailure.ModePS) {
		t.Errorf("the cached failed pod lost its volumes or its job's mode")
	}
	if !explain && got.Spec.Volumes != nil {
		t.Errorf("the cached running pod keeps its volumes")
	}
	built := append(pod.Spec.InitContainers, pod.Spec.Containers...)
	for i, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		if c.Name != built[i].Name || c.Command != nil || c.Args != nil {
			t.Errorf("container %d %s: want the name %s, no command or arguments", i, c.Name, built[i].Name)
		}
		if explain && (len(c.Env) != len(built[i].Env) || !reflect.DeepEqual(c.VolumeMounts, built[i].VolumeMounts)) {
			t.Errorf("container %s: want its variables' names and mounts", c.Name)
		}
		for _, e := range c.Env {
			if !explain || e.Value != "" || e.ValueFrom != nil {
				t.Errorf("container %s keeps the variable %s or its value", c.Name, e.Name)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The cache keeps of a job's Service its metadata, and of its endpoints
// ConfigMap the version of the lists, whatever the job's size.
func TestStripServiceAndConfigMapForCache(t *testing.T) {
	job := testutil.MakePaddleJob("big", "ns").PS(2).Workers(100).Obj()
	data := map[string]string{podcontract.VersionKey: "v7", "PADDLE_TRAINER_ENDPOINTS": strings.Repeat("big-worker-0.big:23000,", 100)}
	cm, err := stripConfigMapForCache(newEndpointsConfigMap(job, data))
	if err != nil {
		t.Fatal(err)
	}
	got := cm.(*corev1.ConfigMap)
	if !reflect.DeepEqual(got.Data, map[string]string{podcontract.VersionKey: "v7"}) || !metav1.IsControlledBy(got, job) || got.Labels[paddlev1.LabelJobName] != "big" {
		t.Errorf("cached ConfigMap: data %v, labels %v, owners %v; want the version alone and its metadata", got.Data, got.Labels, got.OwnerReferences)
	}
	svc, err := stripServiceForCache(newService(job))
	if err != nil {
		t.Fatal(err)
	}
	if s := svc.(*corev1.Service); !reflect.DeepEqual(s.Spec, corev1.ServiceSpec{}) || !metav1.IsControlledBy(s, job) || s.Name != "big" {
		t.Errorf("cached Service: %+v; want its metadata alone", s)
	}
}

// The manager's cache applies the transforms: each owned kind comes
// stripped, managedFields included.
func TestCacheOptionsStripWhatTheOperatorNeverReads(t *testing.T) {
	job := testutil.MakePaddleJob("g", "ns").PS(1).Workers(1).Obj()
	pod := testutil.WrapPod(FirstPods(job, DefaultOptions())[paddlev1.ReplicaWorker].DeepCopy()).Scheduled("n").Running("10.0.0.1").Obj()
	objects := []client.Object{pod, newService(job), newEndpointsConfigMap(job, map[string]string{podcontract.VersionKey: "v1", "PADDLE_TRAINERS_NUM": "1"})}
	for obj, byObject := range CacheOptions(nil).ByObject {
		for _, o := range objects {
			if reflect.TypeOf(o) != reflect.TypeOf(obj) {
				continue
			}
			o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "paddlejob-operator"}})
			if byObject.Transform == nil {
				t.Fatalf("%T: no transform", o)
			}
			if _, err := byObject.Transform(o); err != nil {
				t.Fatal(err)
			}
		}
	}
	if pod.Spec.Volumes != nil || pod.Spec.Containers[0].Env != nil || pod.ManagedFields != nil {
		t.Errorf("the cached pod keeps its volumes, variables or managedFields")
	}
	if svc := objects[1].(*corev1.Service); svc.Spec.Selector != nil || svc.ManagedFields != nil {
		t.Errorf("the cached Service keeps its spec or managedFields")
	}
	if cm := objects[2].(*corev1.ConfigMap); len(cm.Data) != 1 || cm.ManagedFields != nil {
		t.Errorf("the cached ConfigMap keeps %v or its managedFields", cm.Data)
	}
}
