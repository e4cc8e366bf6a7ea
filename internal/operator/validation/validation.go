package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Contract is what the operator gives a job's pods, computed by the code
// that builds them (internal/operator/controller implements it): the checks
// measure and compare against it, never against a copy that could drift.
type Contract interface {
	// Env is the environment the operator gives the first pod of role rt:
	// its pod variables with their values, then the job variables it reads
	// from the endpoints ConfigMap (named, without a value).
	Env(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) []corev1.EnvVar
	// EndpointSizes are the job's endpoint lists at their longest: the
	// environment strings of those that go into the environment, and the
	// bytes of the endpoints ConfigMap's data.
	EndpointSizes(spec *paddlev1.PaddleJobSpec, jobName string) (env []EnvSize, configMap int)
	// GangScheduler names the gang scheduler of the job's pods, "" for none.
	GangScheduler(spec *paddlev1.PaddleJobSpec) string
}

// EnvSize is the longest one environment string of a job variable can get.
type EnvSize struct {
	// Name is the variable; Role the role whose replica count drives it.
	Name string
	Role paddlev1.ReplicaType
	// Bytes counts NAME=value and its terminating NUL, as the kernel does.
	Bytes int
	// Reader says who reads it only from the environment, where no backup
	// file can stand in for it.
	Reader string
}

// Settings are the operator's flags the checks depend on.
type Settings struct {
	// IgnoreKueue: the Kueue integration is off (--ignore-kueue), so the
	// queue-name label means nothing to the operator.
	IgnoreKueue bool
	// ElasticEtcd: the operator has etcd endpoints for elastic jobs that
	// name none (--elastic-etcd-endpoints).
	ElasticEtcd bool
	// ProgressReports: the operator takes the training programs' progress
	// reports (--progress-bind-address).
	ProgressReports bool
	// GangSchedulerNames are the schedulerNames a template may name to be
	// gang-scheduled whatever the operator's --gang-scheduler.
	GangSchedulerNames []string
}

// Validator checks PaddleJobs for the webhook and the controller alike.
type Validator struct {
	Contract Contract
	Settings Settings
}

// Validate is every check of a job the schema cannot make. The endpoint
// limits are measured only for a job that passes the others: their sizes
// follow from the ports the GPUs take.
func (v *Validator) Validate(job *paddlev1.PaddleJob) field.ErrorList {
	spec := &job.Spec
	errs := validateReservedNames(spec)
	errs = append(errs, validateEtcdEndpoints(spec)...)
	errs = append(errs, validateMinResources(spec)...)
	errs = append(errs, validateGPUs(spec)...)
	errs = append(errs, v.validateTemplates(spec)...)
	errs = append(errs, validateGlooDir(spec)...)
	if len(errs) > 0 {
		return errs
	}
	return v.validateEndpoints(spec, job.Name)
}

// ValidateUpdate is every check of a change to a job: the updated job's own
// checks, the fields its running pods were made from (podfields.go), and
// the Kueue queue of a job Kueue admitted.
func (v *Validator) ValidateUpdate(old, updated *paddlev1.PaddleJob) field.ErrorList {
	errs := append(v.Validate(updated), validatePodFieldsUnchanged(old, updated)...)
	if q := old.KueueQueueName(); q != updated.KueueQueueName() && !old.Spec.IsSuspended() && !v.Settings.IgnoreKueue {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels").Key(paddlev1.KueueQueueNameLabel),
			"may change only while the job is suspended (spec.suspend): Kueue admitted it to queue "+q))
	}
	return errs
}

// eachRole calls fn on every role the job has, with the path of its pod
// template's spec.
func eachRole(spec *paddlev1.PaddleJobSpec, fn func(rt paddlev1.ReplicaType, rs *paddlev1.ReplicaSpec, podSpec *field.Path)) {
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := spec.Replicas(rt); rs != nil {
			fn(rt, rs, field.NewPath("spec", string(rt), "template", "spec"))
		}
	}
}
