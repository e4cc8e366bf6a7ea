package webhook

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
)

// Paths of the webhooks, as the generated configurations name them.
const (
	MutatePath   = "/mutate-batch-paddlepaddle-org-v1-paddlejob"
	ValidatePath = "/validate-batch-paddlepaddle-org-v1-paddlejob"
)

// +kubebuilder:webhook:path=/mutate-batch-paddlepaddle-org-v1-paddlejob,mutating=true,failurePolicy=fail,sideEffects=None,groups=batch.paddlepaddle.org,resources=paddlejobs,verbs=create;update,versions=v1,name=mpaddlejob.batch.paddlepaddle.org,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-batch-paddlepaddle-org-v1-paddlejob,mutating=false,failurePolicy=fail,sideEffects=None,groups=batch.paddlepaddle.org,resources=paddlejobs,verbs=create;update,versions=v1,name=vpaddlejob.batch.paddlepaddle.org,admissionReviewVersions=v1

// PaddleJobWebhook defaults and validates PaddleJobs.
type PaddleJobWebhook struct {
	// Options are the operator's settings, to warn about what they ignore.
	Options controller.Options
	// Client, when set, has the API server validate each role's first pod
	// (a server-side dry run) before a job is stored.
	Client client.Client
}

// Setup registers the webhook with a manager's webhook server.
func (w *PaddleJobWebhook) Setup(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &paddlev1.PaddleJob{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default fills in what the schema cannot: the effective restart policy of
// each role, so the stored job says what will happen. The deprecated
// cleanPolicy alias is left as written: api/v1's EffectiveCleanPodPolicy
// alone resolves it, with or without this webhook.
func (w *PaddleJobWebhook) Default(ctx context.Context, job *paddlev1.PaddleJob) error {
	spec := &job.Spec
	// A job sent to a Kueue queue is created suspended: Kueue resumes it
	// once its Workload is admitted (docs/kueue.md).
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Create && job.KueueQueueName() != "" && !w.Options.IgnoreKueue {
		spec.Suspend = ptr.To(true)
	}
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := spec.Replicas(rt); rs != nil && rs.RestartPolicy == "" {
			rs.RestartPolicy = spec.EffectiveRestartPolicy(rt)
		}
	}
	return nil
}

// ValidateCreate rejects what the schema cannot and warns about deprecated
// or ignored fields.
func (w *PaddleJobWebhook) ValidateCreate(ctx context.Context, job *paddlev1.PaddleJob) (admission.Warnings, error) {
	errs := validate(job)
	warnings := w.warnings(job)
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
	if w.Client == nil {
		return nil, nil
	}
	var errs field.ErrorList
	var warnings admission.Warnings
	pods := controller.FirstPods(job, w.Options)
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
	errs := append(validate(updated), paddlev1.ValidateUpdate(old, updated)...)
	if q := old.KueueQueueName(); q != updated.KueueQueueName() && !old.Spec.IsSuspended() && !w.Options.IgnoreKueue {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels").Key(paddlev1.KueueQueueNameLabel),
			"may change only while the job is suspended (spec.suspend): Kueue admitted it to queue "+q))
	}
	warnings := w.warnings(updated)
	if old.Status.IsFinished() && !equalSpecs(old, updated) {
		warnings = append(warnings, fmt.Sprintf("the job has %s: changes to its spec have no effect", old.Status.Phase))
	}
	return warnings, invalid(updated, errs)
}

// validate is every check of a job's spec the schema cannot make.
func validate(job *paddlev1.PaddleJob) field.ErrorList {
	return controller.Validate(&job.Spec, job.Name)
}

// ValidateDelete allows every deletion.
func (w *PaddleJobWebhook) ValidateDelete(context.Context, *paddlev1.PaddleJob) (admission.Warnings, error) {
	return nil, nil
}

// warnings name the fields that are deprecated or that change nothing.
func (w *PaddleJobWebhook) warnings(job *paddlev1.PaddleJob) admission.Warnings {
	var out admission.Warnings
	spec := &job.Spec
	if spec.CleanPolicy != "" {
		out = append(out, "spec.cleanPolicy is deprecated (paddle-operator's spelling): use spec.cleanPodPolicy")
	}
	if spec.Worker != nil && (spec.Worker.Requests != nil || spec.Worker.Limits != nil) {
		out = append(out, "spec.worker.requests and spec.worker.limits are paddle-operator's elastic bounds: prefer spec.elasticPolicy.minReplicas and maxReplicas")
	}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaHeter} {
		if rs := spec.Replicas(rt); rs != nil && (rs.Requests != nil || rs.Limits != nil) {
			out = append(out, fmt.Sprintf("spec.%s.requests and limits are ignored: only workers are elastic", rt))
		}
	}
	if spec.SchedulingPolicy != nil && controller.GangSchedulerFor(spec, w.Options) == "" {
		out = append(out, fmt.Sprintf("spec.schedulingPolicy is ignored: the operator runs without a gang scheduler (--gang-scheduler=none) and no template names one (schedulerName %s or %s)",
			controller.VolcanoSchedulerName, w.Options.SchedulerPluginsName))
	}
	if spec.IsElastic() && (spec.ElasticPolicy == nil || len(spec.ElasticPolicy.EtcdEndpoints) == 0) && len(w.Options.ElasticEtcdEndpoints) == 0 {
		out = append(out, "the job is elastic but names no etcd (spec.elasticPolicy.etcdEndpoints) and the operator has none: PADDLE_MASTER stays unset and Paddle's launcher will not run elastic")
	}
	if spec.ProgressDeadlineSeconds != nil && w.Options.Progress.Store == nil {
		out = append(out, "spec.progressDeadlineSeconds is ignored: the operator takes no progress reports (--progress-bind-address=0), so none can come")
	}
	out = append(out, controller.TemplateWarnings(spec)...)
	out = append(out, launcherWarnings(job)...)
	if spec.Elastic != nil && *spec.Elastic == 0 {
		out = append(out, "spec.elastic: 0 changes nothing (elastic training is off by default)")
	}
	return out
}

func equalSpecs(a, b *paddlev1.PaddleJob) bool { return equality.Semantic.DeepEqual(a.Spec, b.Spec) }

// invalid is the API error of a list of field errors, or nil.
func invalid(job *paddlev1.PaddleJob, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(paddlev1.GroupVersion.WithKind("PaddleJob").GroupKind(), job.Name, errs)
}
