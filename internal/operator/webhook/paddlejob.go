package webhook

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
)

// Paths of the webhooks, as the generated configurations name them.
const (
	MutatePath   = "/mutate-batch-paddlepaddle-org-v1-paddlejob"
	ValidatePath = "/validate-batch-paddlepaddle-org-v1-paddlejob"
)

// +kubebuilder:webhook:path=/mutate-batch-paddlepaddle-org-v1-paddlejob,mutating=true,failurePolicy=fail,sideEffects=None,groups=batch.paddlepaddle.org,resources=paddlejobs,verbs=create;update,versions=v1,name=mpaddlejob.batch.paddlepaddle.org,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-batch-paddlepaddle-org-v1-paddlejob,mutating=false,failurePolicy=fail,sideEffects=None,groups=batch.paddlepaddle.org,resources=paddlejobs,verbs=create;update,versions=v1,name=vpaddlejob.batch.paddlepaddle.org,admissionReviewVersions=v1

// PaddleJobWebhook defaults and validates PaddleJobs with the checks the
// controller applies too (internal/operator/validation).
type PaddleJobWebhook struct {
	// Validator holds the checks, measured against the operator's pods and
	// settings (the controller's NewValidator).
	Validator *validation.Validator
	// FirstPods, with Client, has the API server validate each role's first
	// pod as the operator would create it (a server-side dry run) before a
	// job is stored; either nil skips the dry run.
	FirstPods func(*paddlev1.PaddleJob) map[paddlev1.ReplicaType]*corev1.Pod
	Client    client.Client
}

// Setup registers the webhook with a manager's webhook server.
func (w *PaddleJobWebhook) Setup(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &paddlev1.PaddleJob{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default fills in what the schema cannot (api/v1's SetDefaults: each
// role's restart policy, the restart scope), so the stored job says what
// will happen.
func (w *PaddleJobWebhook) Default(ctx context.Context, job *paddlev1.PaddleJob) error {
	spec := &job.Spec
	// A job sent to a Kueue queue is created suspended: Kueue resumes it
	// once its Workload is admitted (docs/kueue.md).
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Create && job.KueueQueueName() != "" && !w.Validator.Settings.IgnoreKueue {
		spec.Suspend = ptr.To(true)
	}
	spec.SetDefaults()
	return nil
}

// ValidateCreate rejects what the schema cannot and warns about deprecated
// or ignored fields.
func (w *PaddleJobWebhook) ValidateCreate(ctx context.Context, job *paddlev1.PaddleJob) (admission.Warnings, error) {
	errs := w.Validator.Validate(job)
	warnings := admission.Warnings(w.Validator.Warnings(job))
	if len(errs) == 0 {
		podErrs, podWarnings := w.dryRunPods(ctx, job)
		errs, warnings = append(errs, podErrs...), append(warnings, podWarnings...)
	}
	return warnings, invalid(job, errs)
}

// dryRunPods has the API server validate the first pod of each role as the
// operator would create it, without storing it: a template every pod would
// be refused for (two containers of one name, a mount of a volume the pod
// lacks, a Pod Security violation) is refused with the job, in the API
// server's own words, instead of failing pod by pod. A refusal that may
// pass later (a quota, a webhook's outage) is a warning.
func (w *PaddleJobWebhook) dryRunPods(ctx context.Context, job *paddlev1.PaddleJob) (field.ErrorList, admission.Warnings) {
	if w.Client == nil || w.FirstPods == nil {
		return nil, nil
	}
	var errs field.ErrorList
	var warnings admission.Warnings
	pods := w.FirstPods(job)
	for _, rt := range paddlev1.ReplicaTypes {
		pod := pods[rt]
		if pod == nil {
			continue
		}
		// A name of its own: the dry run must not meet an existing pod.
		pod.Name, pod.GenerateName = "", pod.Name+"-"
		pod.OwnerReferences = nil // the job does not exist yet
		err := w.Client.Create(ctx, pod, client.DryRunAll)
		path := field.NewPath("spec", string(rt), "template")
		switch {
		case err == nil:
		case apierrors.IsInvalid(err), apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity"):
			errs = append(errs, field.Invalid(path, "(pod template)", "the API server refuses its pods: "+err.Error()))
		default:
			warnings = append(warnings, fmt.Sprintf("%s: the API server did not accept a dry run of its first pod (the job is accepted; its pods may fail the same way): %v", path, err))
		}
	}
	return errs, warnings
}

// ValidateUpdate also refuses changes a started job's pods cannot follow.
func (w *PaddleJobWebhook) ValidateUpdate(_ context.Context, old, updated *paddlev1.PaddleJob) (admission.Warnings, error) {
	return w.Validator.WarningsOnUpdate(old, updated), invalid(updated, w.Validator.ValidateUpdate(old, updated))
}

// ValidateDelete allows every deletion.
func (w *PaddleJobWebhook) ValidateDelete(context.Context, *paddlev1.PaddleJob) (admission.Warnings, error) {
	return nil, nil
}

// invalid is the API error of a list of field errors, or nil.
func invalid(job *paddlev1.PaddleJob, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(paddlev1.GroupVersion.WithKind("PaddleJob").GroupKind(), job.Name, errs)
}
