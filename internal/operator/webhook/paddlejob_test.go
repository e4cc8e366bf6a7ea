package webhook

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestDefault(t *testing.T) {
	w := &PaddleJobWebhook{Validator: &validation.Validator{}}
	job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj()
	job.Spec.CleanPolicy = paddlev1.CleanPodPolicyOnCompletion
	job.Spec.Elastic = ptr.To[int32](1)
	if err := w.Default(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.CleanPodPolicy != "" || job.Spec.CleanPolicy != paddlev1.CleanPodPolicyOnCompletion {
		t.Errorf("cleanPodPolicy %q, cleanPolicy %q: want the alias left as written, for api/v1 to resolve", job.Spec.CleanPodPolicy, job.Spec.CleanPolicy)
	}
	if job.Spec.Worker.RestartPolicy != paddlev1.RestartPolicyOnFailure || job.Spec.PS.RestartPolicy != paddlev1.RestartPolicyNever {
		t.Errorf("restart policies: worker %q, ps %q", job.Spec.Worker.RestartPolicy, job.Spec.PS.RestartPolicy)
	}
}

// A job sent to a Kueue queue is created suspended; an update leaves
// suspend alone (Kueue resumes the job), and so does an operator whose Kueue
// integration is off.
func TestDefaultSuspendsQueuedJobsAtCreation(t *testing.T) {
	tests := []struct {
		name        string
		op          admissionv1.Operation
		queue       string
		ignoreKueue bool
		want        bool
	}{
		{name: "created with a queue", op: admissionv1.Create, queue: "team-a", want: true},
		{name: "created without a queue", op: admissionv1.Create},
		{name: "updated with a queue", op: admissionv1.Update, queue: "team-a"},
		{name: "created with a queue, integration off", op: admissionv1.Create, queue: "team-a", ignoreKueue: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &PaddleJobWebhook{Validator: &validation.Validator{Settings: validation.Settings{IgnoreKueue: tc.ignoreKueue}}}
			job := testutil.MakePaddleJob("j", "ns").Workers(2).Obj()
			if tc.queue != "" {
				job.Labels = map[string]string{paddlev1.KueueQueueNameLabel: tc.queue}
			}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.op}})
			if err := w.Default(ctx, job); err != nil {
				t.Fatal(err)
			}
			if got := job.Spec.IsSuspended(); got != tc.want {
				t.Errorf("suspended %v, want %v", got, tc.want)
			}
		})
	}
}

// The webhook answers with validation's errors, as an Invalid API error
// naming each field, and its warnings; an update's too. (The checks
// themselves are validation's tests; the webhook through a real API server
// is test/webhook's.)
func TestValidateAnswersWithValidation(t *testing.T) {
	w := &PaddleJobWebhook{Validator: &validation.Validator{}}
	job := testutil.MakePaddleJob("j", "ns").Workers(2).Obj()
	job.Spec.Worker.Template.Spec.Containers[0].Name = paddlev1.ReservedInitContainer
	job.Spec.CleanPolicy = paddlev1.CleanPodPolicyNever
	warnings, err := w.ValidateCreate(context.Background(), job)
	want := `PaddleJob.batch.paddlepaddle.org "j" is invalid: spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved`
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	if got := strings.Join(warnings, "\n"); !strings.Contains(got, "spec.cleanPolicy is deprecated") {
		t.Errorf("warnings %q", got)
	}

	old := testutil.MakePaddleJob("j", "ns").Workers(2).Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning}).Obj()
	updated := old.DeepCopy()
	updated.Spec.Intranet = paddlev1.IntranetService
	if _, err := w.ValidateUpdate(context.Background(), old, updated); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.intranet: Forbidden") {
		t.Errorf("update: %v", err)
	}
	updated = old.DeepCopy()
	updated.Spec.Worker.Replicas = 3
	if _, err := w.ValidateUpdate(context.Background(), old, updated); err != nil {
		t.Errorf("scaling: %v", err)
	}
}
