package controller

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestElasticEnv(t *testing.T) {
	job := testutil.MakePaddleJob("el", "ns").Workers(3).Obj()
	if env := elasticEnv(job, []string{"http://etcd:2379"}); env != nil {
		t.Errorf("a job that is not elastic got %v", env)
	}
	job.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4), TimeoutSeconds: ptr.To[int32](90)}
	want := []corev1.EnvVar{
		{Name: "PADDLE_ELASTIC_SERVER", Value: "10.0.0.5:2379,etcd-1:2379"},
		{Name: "PADDLE_ELASTIC_JOB_ID", Value: "ns-el"},
		{Name: "PADDLE_ELASTIC_NP", Value: "2:4"},
		{Name: "PADDLE_ELASTIC_TIMEOUT", Value: "90"},
	}
	if diff := cmp.Diff(want, elasticEnv(job, []string{"http://10.0.0.5:2379", "etcd-1:2379"})); diff != "" {
		t.Errorf("elastic env (-want +got):\n%s", diff)
	}
	// paddle-operator's spelling: elastic: 1 with worker requests/limits.
	compat := testutil.MakePaddleJob("el", "ns").Workers(3).Obj()
	compat.Spec.Elastic = ptr.To[int32](1)
	compat.Spec.Worker.Requests, compat.Spec.Worker.Limits = ptr.To[int32](1), ptr.To[int32](5)
	if minR, maxR := compat.Spec.ElasticBounds(); minR != 1 || maxR != 5 {
		t.Errorf("requests/limits bounds = %d:%d", minR, maxR)
	}
	if got := elasticEnv(compat, nil); len(got) != 3 || got[1].Value != "1:5" {
		t.Errorf("without an etcd: %v", got)
	}
}

// fakeNP records what the sync writes; the etcd client itself is exercised
// against a real etcd in the integration tests.
type fakeNP struct{ kv map[string]string }

func (f *fakeNP) Put(_ context.Context, k, v string) error { f.kv[k] = v; return nil }
func (f *fakeNP) Delete(_ context.Context, k string) error { delete(f.kv, k); return nil }

func TestElasticSyncWritesOnlyChanges(t *testing.T) {
	store := &fakeNP{kv: map[string]string{}}
	dials := 0
	s := newElasticSync([]string{"http://etcd:2379"})
	s.newClient = func([]string) (npStore, error) { dials++; return store, nil }
	rec := events.NewFakeRecorder(10)
	job := testutil.MakePaddleJob("el", "ns").Workers(2).Obj()
	job.Spec.Elastic = ptr.To[int32](1)

	s.sync(context.Background(), rec, job)
	s.sync(context.Background(), rec, job)
	if store.kv["/paddle/ns-el/np"] != "2" || dials != 1 {
		t.Fatalf("np = %q after %d dials", store.kv["/paddle/ns-el/np"], dials)
	}
	job.Spec.Worker.Replicas = 4
	s.sync(context.Background(), rec, job)
	if store.kv["/paddle/ns-el/np"] != "4" {
		t.Fatalf("np after scaling = %q", store.kv["/paddle/ns-el/np"])
	}
	s.forget(context.Background(), refOf(job).key)
	if _, ok := store.kv["/paddle/ns-el/np"]; ok {
		t.Error("the np key outlived the job")
	}
}
