package podcontract

import (
	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Gang schedulers, as the operator's --gang-scheduler flag names them.
const (
	GangVolcano          = "volcano"
	GangSchedulerPlugins = "scheduler-plugins"
	GangNone             = "none"

	// DefaultSchedulerPluginsName is the scheduler name scheduler-plugins'
	// coscheduling is deployed under by default.
	DefaultSchedulerPluginsName = "scheduler-plugins-scheduler"

	// VolcanoSchedulerName is the scheduler name Volcano's pods carry.
	VolcanoSchedulerName = "volcano"
)

// GangSettings are the operator's settings that choose a job's gang
// scheduler.
type GangSettings struct {
	// Default is the gang scheduler of a job with a schedulingPolicy whose
	// templates name none (--gang-scheduler): GangVolcano,
	// GangSchedulerPlugins or GangNone.
	Default string
	// SchedulerPluginsName is the scheduler name scheduler-plugins runs
	// under (--scheduler-plugins-name).
	SchedulerPluginsName string
}

// GangScheduler is the gang scheduler of a job: the one a template names
// as its scheduler (volcano, or scheduler-plugins' name), else — for a job
// with a schedulingPolicy — the operator's default; "" for none. A template
// naming default-scheduler, or any other scheduler, names no gang
// scheduler. The admission webhook warns by the same rule.
func GangScheduler(spec *paddlev1.PaddleJobSpec, s GangSettings) string {
	for _, rt := range paddlev1.ReplicaTypes {
		rs := spec.Replicas(rt)
		if rs == nil {
			continue
		}
		switch rs.Template.Spec.SchedulerName {
		case VolcanoSchedulerName:
			return GangVolcano
		case s.SchedulerPluginsName:
			return GangSchedulerPlugins
		}
	}
	if spec.SchedulingPolicy != nil && s.Default != GangNone {
		return s.Default
	}
	return ""
}
