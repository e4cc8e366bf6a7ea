package controller

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// TestEndpointsConfigMapIsNeverAnothers: the job's <job>-endpoints is
// created, or updated when it is the job's; another's ConfigMap of that name
// is left byte for byte and the error names it.
func TestEndpointsConfigMapIsNeverAnothers(t *testing.T) {
	job := testutil.MakePaddleJob("train", "ns").Obj()
	job.UID = "job-uid"
	want := podcontract.EndpointsData(map[string]string{"PADDLE_TRAINERS_NUM": "2"})
	name := podcontract.EndpointsConfigMapName(job.Name)
	foreign := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Data:       map[string]string{"user": "data"},
	}
	stale := newEndpointsConfigMap(job, podcontract.EndpointsData(map[string]string{"PADDLE_TRAINERS_NUM": "1"}))
	for _, tc := range []struct {
		name     string
		existing *corev1.ConfigMap
		wantErr  string
		wantData map[string]string
	}{
		{name: "missing: created", wantData: want},
		{name: "the job's: updated", existing: stale, wantData: want},
		{name: "another's: left as it is", existing: foreign, wantErr: "ConfigMap ns/train-endpoints exists and is not PaddleJob train's", wantData: foreign.Data},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			ctx := context.Background()
			if tc.existing != nil {
				if err := f.client.Create(ctx, tc.existing.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			err := f.r.ensureEndpointsConfigMap(ctx, job, want)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			var got corev1.ConfigMap
			if err := f.client.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, &got); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.Data, tc.wantData) {
				t.Errorf("data %v, want %v", got.Data, tc.wantData)
			}
			if tc.existing == foreign && len(got.OwnerReferences) != 0 {
				t.Errorf("another's ConfigMap got owner references %v", got.OwnerReferences)
			}
		})
	}
}
