package controller

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The reconciler's feature tests drive whole passes: a job and the pods the
// cache shows go into a fake client (with the status subresource and the
// pod owner index the manager registers), the clock is a fake one, and a
// pass's outcome is read back from the client — the pods it created and
// deleted, the job's status, the requeue.

// t0 is the fake clock's time when a test starts.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is one reconciler on a fake client and a fake clock.
type fixture struct {
	r      *PaddleJobReconciler
	client client.Client
	clock  *clocktesting.FakeClock
	events *events.FakeRecorder
}

func newFixture(t *testing.T, opts Options, objs ...client.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, opts, interceptor.Funcs{}, objs...)
}

// newFixtureWith is newFixture with a client whose calls funcs intercept,
// to make the API server fail in a test.
func newFixtureWith(t *testing.T, opts Options, funcs interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := paddlev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().
		WithScheme(scheme).
		WithObjects(objs...).
		WithStatusSubresource(&paddlev1.PaddleJob{}).
		WithIndex(&corev1.Pod{}, podOwnerKey, podOwnerIndex).
		WithInterceptorFuncs(funcs).
		Build()
	recorder := events.NewFakeRecorder(1000)
	r := NewReconciler(readingAsCached(c), recorder, opts)
	clock := clocktesting.NewFakeClock(t0)
	r.Clock = clock
	return &fixture{r: r, client: c, clock: clock, events: recorder}
}

// readingAsCached is c as the reconciler reads it through the manager's
// cache: pods, Services and ConfigMaps come stripped (CacheOptions'
// transforms), so every pass test also shows that no decision reads what the
// cache drops.
func readingAsCached(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			asCached(obj)
			return nil
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if pods, ok := list.(*corev1.PodList); ok {
				for i := range pods.Items {
					asCached(&pods.Items[i])
				}
			}
			return nil
		},
	})
}

// asCached strips an object as the manager's cache keeps it.
func asCached(obj client.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		_, _ = stripPodForCache(o)
	case *corev1.Service:
		_, _ = stripServiceForCache(o)
	case *corev1.ConfigMap:
		_, _ = stripConfigMapForCache(o)
	}
}

// passResult is what one pass did.
type passResult struct {
	result  reconcile.Result
	err     error
	created []string // pods that did not exist before, by name
	deleted []string // pods that existed and are gone (or terminating)
	// job is the job after the pass; nil when the pass deleted it.
	job *paddlev1.PaddleJob
	// pods are the job's pods after the pass, by name.
	pods map[string]*corev1.Pod
	// client reads the other objects after the pass.
	client client.Client
}

// reconcile runs one pass over the job of that name, and when that pass
// finishes the job, the one the status's event brings in a cluster: the
// finishing pass writes the status alone, the next stops what the job
// still runs.
func (f *fixture) reconcile(t *testing.T, job *paddlev1.PaddleJob) passResult {
	t.Helper()
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: job.Namespace, Name: job.Name}}
	before := f.pods(t, job.Namespace)
	wasFinished := f.finished(t, job)
	res, err := f.r.Reconcile(ctx, req)
	if err == nil && !wasFinished && f.finished(t, job) {
		res, err = f.r.Reconcile(ctx, req)
	}
	after := f.pods(t, job.Namespace)
	out := passResult{result: res, err: err, pods: after, client: f.client}
	for name, p := range after {
		if b, ok := before[name]; !ok || b.UID != p.UID {
			out.created = append(out.created, name)
		}
	}
	for name, p := range before {
		if a, ok := after[name]; !ok || a.UID != p.UID || (p.DeletionTimestamp == nil && a.DeletionTimestamp != nil) {
			out.deleted = append(out.deleted, name)
		}
	}
	sort.Strings(out.created)
	sort.Strings(out.deleted)
	got := &paddlev1.PaddleJob{}
	switch err := f.client.Get(ctx, client.ObjectKeyFromObject(job), got); {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	default:
		out.job = got
	}
	return out
}

// finished reports whether the job is stored finished.
func (f *fixture) finished(t *testing.T, job *paddlev1.PaddleJob) bool {
	t.Helper()
	got := &paddlev1.PaddleJob{}
	switch err := f.client.Get(context.Background(), client.ObjectKeyFromObject(job), got); {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		t.Fatal(err)
	}
	return got.Status.IsFinished()
}

func (f *fixture) pods(t *testing.T, ns string) map[string]*corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := f.client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// passWant is the outcome a feature test expects of a pass. Zero fields
// are checked too: no pods created, none deleted, no requeue.
type passWant struct {
	created, deleted []string
	requeue          time.Duration
	// phase is the job's phase after the pass; "" leaves it unchecked.
	phase paddlev1.PaddleJobPhase
	// conditions are conditions the job has after the pass, by type.
	conditions map[string]wantCondition
	// jobDeleted says the pass deleted the job itself.
	jobDeleted bool
}

type wantCondition struct {
	status metav1.ConditionStatus
	reason string
}

func (w passWant) check(t *testing.T, got passResult) {
	t.Helper()
	if got.err != nil {
		t.Fatalf("pass failed: %v", got.err)
	}
	if !slices.Equal(got.created, w.created) {
		t.Errorf("created %v, want %v", got.created, w.created)
	}
	if !slices.Equal(got.deleted, w.deleted) {
		t.Errorf("deleted %v, want %v", got.deleted, w.deleted)
	}
	if got.result.RequeueAfter != w.requeue {
		t.Errorf("requeue after %s, want %s", got.result.RequeueAfter, w.requeue)
	}
	if (got.job == nil) != w.jobDeleted {
		t.Fatalf("job deleted: %v, want %v", got.job == nil, w.jobDeleted)
	}
	if got.job == nil {
		return
	}
	if w.phase != "" && got.job.Status.Phase != w.phase {
		t.Errorf("phase %q, want %q", got.job.Status.Phase, w.phase)
	}
	for typ, want := range w.conditions {
		c := meta.FindStatusCondition(got.job.Status.Conditions, typ)
		if c == nil || c.Status != want.status || c.Reason != want.reason {
			t.Errorf("condition %s = %+v, want %s/%s", typ, c, want.status, want.reason)
		}
	}
}

// objects lists a job and its pods for newFixture.
func objects(job *paddlev1.PaddleJob, pods ...*corev1.Pod) []client.Object {
	out := []client.Object{job}
	for _, p := range pods {
		out = append(out, p)
	}
	return out
}

// finishedStatus is the status of a job that finished in phase ago.
func finishedStatus(phase paddlev1.PaddleJobPhase, ago time.Duration) paddlev1.PaddleJobStatus {
	done := metav1.NewTime(t0.Add(-ago))
	start := metav1.NewTime(t0.Add(-ago - time.Hour))
	return paddlev1.PaddleJobStatus{Phase: phase, StartTime: &start, CompletionTime: &done}
}
