package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A pod the namespace's PodSecurity level refuses: the Created condition
// says PodSecurityRefused, with the namespace, the level and the fields as
// the API server named them, and what to change. Another refusal of a pod
// stays PodCreationFailed.
func TestPodSecurityRefusalIsSaid(t *testing.T) {
	const apiMessage = `violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), hostPath volumes (volume "etc")`
	refuse := func(why string) interceptor.Funcs {
		return interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				return apierrors.NewForbidden(corev1.Resource("pods"), obj.GetName(), errors.New(why))
			}
			return c.Create(ctx, obj, opts...)
		}}
	}
	tests := []struct {
		name, why, reason string
		words             []string
	}{
		{"PodSecurity", apiMessage, paddlev1.ReasonPodSecurityRefused,
			[]string{"namespace ns's PodSecurity level refuses it", apiMessage, "pod-security.kubernetes.io/enforce"}},
		{"a quota", "exceeded quota: pods", paddlev1.ReasonPodCreationFailed, []string{"exceeded quota: pods"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := testutil.MakePaddleJob("ps", "ns").UID("ps-uid").Workers(1).Intranet(paddlev1.IntranetHost).Obj()
			f := newFixtureWith(t, Options{}, refuse(tc.why), objects(j)...)
			got := f.reconcile(t, j)
			c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobCreated)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason {
				t.Fatalf("Created condition %+v, want False with %s", c, tc.reason)
			}
			for _, w := range tc.words {
				if !strings.Contains(c.Message, w) {
					t.Errorf("the condition's message %q does not say %q", c.Message, w)
				}
			}
		})
	}
}
