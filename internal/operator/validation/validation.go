package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// EnvSize is the longest one environment string of a job variable can get
// (podcontract.EndpointSizes measures them).
type EnvSize = podcontract.EnvSize

// Settings are the operator's settings the checks depend on: its flags, as
// the controller's Options hold them (controller.NewValidator), or as
// `paddlejob validate` reads or assumes them.
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
	// Gang chooses a job's gang scheduler (--gang-scheduler,
	// --scheduler-plugins-name); an empty SchedulerPluginsName is
	// podcontract.DefaultSchedulerPluginsName.
	Gang podcontract.GangSettings
}

// DefaultSettings are the settings of an operator installed by config/ or
// the chart with its defaults: no etcd of its own for elastic jobs, progress
// reports on, Volcano as the default gang scheduler, the Kueue integration
// on.
func DefaultSettings() Settings {
	return Settings{
		ProgressReports: true,
		Gang:            podcontract.GangSettings{Default: podcontract.GangVolcano, SchedulerPluginsName: podcontract.DefaultSchedulerPluginsName},
	}
}

// gang is the settings' gang scheduler choice, with its defaults.
func (s Settings) gang() podcontract.GangSettings {
	g := s.Gang
	if g.SchedulerPluginsName == "" {
		g.SchedulerPluginsName = podcontract.DefaultSchedulerPluginsName
	}
	return g
}

// gangSchedulerNames are the schedulerNames a template may name to be
// gang-scheduled whatever the operator's --gang-scheduler.
func (s Settings) gangSchedulerNames() []string {
	return []string{podcontract.VolcanoSchedulerName, s.gang().SchedulerPluginsName}
}

// Validator checks PaddleJobs for the webhook and the controller alike.
type Validator struct {
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
