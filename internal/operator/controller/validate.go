package controller

import (
	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
)

// The checks of a job beyond its schema live in internal/operator/validation,
// shared with the admission webhook; they measure against the pod contract
// (internal/operator/podcontract) the pods here are built from. This file
// hands them the operator's settings.

// MaxGPUsPerPod bounds the nvidia.com/gpu a pod may ask for (validation
// refuses more); the port arithmetic saturates past it.
const MaxGPUsPerPod = podcontract.MaxGPUsPerPod

// NewValidator is the validation of the jobs an operator with these options
// runs: the reconciler's and the webhook's.
func NewValidator(opts Options) *validation.Validator {
	return &validation.Validator{Settings: opts.validationSettings()}
}

// validationSettings are the options the checks depend on.
func (o Options) validationSettings() validation.Settings {
	return validation.Settings{
		IgnoreKueue:     o.IgnoreKueue,
		ElasticEtcd:     len(o.ElasticEtcdEndpoints) > 0,
		ProgressReports: o.Progress.Store != nil,
		Gang:            o.gangSettings(),
	}
}

// validateForRun checks what the schema cannot (validation.Validate): the
// admission webhook rejects it already where it is installed. A generation
// the status has already observed was validated by the pass that wrote it
// (an invalid one would have failed the job), so the check runs once per
// spec change, not on every pod event: measuring the endpoint lists of a
// 1000-pod job costs about 0.7 ms and 230 KB.
func (r *PaddleJobReconciler) validateForRun(job *paddlev1.PaddleJob) string {
	if job.Generation > 0 && job.Status.ObservedGeneration == job.Generation {
		return ""
	}
	if errs := r.validator.Validate(job); len(errs) > 0 {
		return errs.ToAggregate().Error()
	}
	return ""
}
