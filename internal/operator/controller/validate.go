package controller

import (
	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
)

// The checks of a job beyond its schema live in internal/operator/validation,
// shared with the admission webhook. This file hands them what they measure
// against: the pods this package makes (podContract), and the operator's
// settings.

// MaxGPUsPerPod bounds the nvidia.com/gpu a pod may ask for (validation
// refuses more); the port arithmetic (ports.go) saturates past it.
const MaxGPUsPerPod = validation.MaxGPUsPerPod

// NewValidator is the validation of the jobs an operator with these options
// runs: the reconciler's and the webhook's.
func NewValidator(opts Options) *validation.Validator {
	def := DefaultOptions()
	if opts.SchedulerPluginsName == "" {
		opts.SchedulerPluginsName = def.SchedulerPluginsName
	}
	return &validation.Validator{
		Contract: podContract{opts: opts},
		Settings: validation.Settings{
			IgnoreKueue:        opts.IgnoreKueue,
			ElasticEtcd:        len(opts.ElasticEtcdEndpoints) > 0,
			ProgressReports:    opts.Progress.Store != nil,
			GangSchedulerNames: []string{VolcanoSchedulerName, opts.SchedulerPluginsName},
		},
	}
}

// podContract answers validation's questions with the code that makes the
// pods.
type podContract struct{ opts Options }

// Env is the environment of a role's first pod: its pod variables (with an
// etcd, so that an elastic job's are all there) and the job variables it
// reads from the endpoints ConfigMap.
func (c podContract) Env(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) []corev1.EnvVar {
	job := &paddlev1.PaddleJob{Spec: *spec}
	env := podEnv(job, rt, 0, portRange{First: DefaultBasePort, Count: portsPerPod(spec.Replicas(rt))}, podOptions{elasticEndpoints: []string{"http://etcd:2379"}})
	for _, n := range jobEnvNames(spec, rt) {
		env = append(env, corev1.EnvVar{Name: n})
	}
	return env
}

// EndpointSizes measures the endpoint lists at their longest (envlimits.go).
func (c podContract) EndpointSizes(spec *paddlev1.PaddleJobSpec, jobName string) ([]validation.EnvSize, int) {
	return endpointSizes(spec, jobName)
}

// GangScheduler is the job's gang scheduler under the operator's settings.
func (c podContract) GangScheduler(spec *paddlev1.PaddleJobSpec) string {
	return GangSchedulerFor(spec, c.opts)
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
