package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A create error longer than an event note and a condition message still
// reaches both, cut: the event is not refused and lost, the status write
// does not fail.
func TestLongCreateErrorsAreCut(t *testing.T) {
	job := testutil.MakePaddleJob("long", "ns").UID("long-uid").Workers(2).Intranet(paddlev1.IntranetService).Obj()
	long := "admission webhook \"deny.example.com\" denied the request: " + strings.Repeat("policy violation; ", 3000)
	deny := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), errorString(long))
		}
		return c.Create(ctx, obj, opts...)
	}}
	f := newFixtureWith(t, Options{}, deny, job)
	got := f.reconcile(t, job)
	if got.err == nil {
		t.Fatal("the pass did not fail")
	}
	c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobCreated)
	if c == nil || len(c.Message) > maxConditionMessage || !strings.Contains(c.Message, "denied the request") || !strings.Contains(c.Message, "more bytes cut") {
		t.Fatalf("Created condition message of %d bytes: want the error cut to %d, saying so", len(c.Message), maxConditionMessage)
	}
	close(f.events.Events)
	found := false
	for e := range f.events.Events {
		if !strings.Contains(e, "FailedCreatePod") {
			continue
		}
		found = true
		note := e[strings.Index(e, "FailedCreatePod ")+len("FailedCreatePod "):]
		if len(note) > maxEventNote || !strings.HasSuffix(note, "more bytes cut)") {
			t.Errorf("FailedCreatePod note of %d bytes ends %q: want it cut to %d", len(note), note[max(len(note)-40, 0):], maxEventNote)
		}
	}
	if !found {
		t.Error("no FailedCreatePod event")
	}
}
