package v1

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

// Replicas returns the spec of a role, or nil when the job does not have it.
func (s *PaddleJobSpec) Replicas(rt ReplicaType) *ReplicaSpec {
	switch rt {
	case ReplicaPS:
		return s.PS
	case ReplicaWorker:
		return s.Worker
	case ReplicaHeter:
		return s.Heter
	}
	return nil
}

// ReplicaCount is the number of pods a role asks for (0 when absent).
func (s *PaddleJobSpec) ReplicaCount(rt ReplicaType) int {
	if r := s.Replicas(rt); r != nil {
		return int(r.Replicas)
	}
	return 0
}

// TotalReplicas is the number of pods of the whole job.
func (s *PaddleJobSpec) TotalReplicas() int {
	n := 0
	for _, rt := range ReplicaTypes {
		n += s.ReplicaCount(rt)
	}
	return n
}

// Mode is the training mode the roles select.
func (s *PaddleJobSpec) Mode() PaddleJobMode {
	switch {
	case s.PS != nil:
		return PaddleJobModePS
	case s.ReplicaCount(ReplicaWorker) > 1:
		return PaddleJobModeCollective
	default:
		return PaddleJobModeSingle
	}
}

// EffectiveCleanPodPolicy is spec.cleanPodPolicy, else its deprecated alias
// spec.cleanPolicy, else Never.
func (s *PaddleJobSpec) EffectiveCleanPodPolicy() CleanPodPolicy {
	switch {
	case s.CleanPodPolicy != "":
		return s.CleanPodPolicy
	case s.CleanPolicy != "":
		return s.CleanPolicy
	default:
		return CleanPodPolicyNever
	}
}

// GlooLevel is spec.withGloo, 0 when unset.
func (s *PaddleJobSpec) GlooLevel() int32 {
	if s.WithGloo == nil {
		return 0
	}
	return *s.WithGloo
}

// ReplicaStatus returns the status counters of a role, or nil.
func (s *PaddleJobStatus) ReplicaStatus(rt ReplicaType) *ReplicaStatus {
	switch rt {
	case ReplicaPS:
		return s.PS
	case ReplicaWorker:
		return s.Worker
	case ReplicaHeter:
		return s.Heter
	}
	return nil
}

// SetReplicaStatus sets the status counters of a role.
func (s *PaddleJobStatus) SetReplicaStatus(rt ReplicaType, rs *ReplicaStatus) {
	switch rt {
	case ReplicaPS:
		s.PS = rs
	case ReplicaWorker:
		s.Worker = rs
	case ReplicaHeter:
		s.Heter = rs
	}
}

// IsFinished reports whether the job has reached a terminal phase.
func (s *PaddleJobStatus) IsFinished() bool {
	return s.Phase == PaddleJobCompleted || s.Phase == PaddleJobFailed
}

// IsConditionTrue reports whether the condition of the given type is True.
func (s *PaddleJobStatus) IsConditionTrue(conditionType string) bool {
	return meta.IsStatusConditionTrue(s.Conditions, conditionType)
}

// IsSuspended reports whether spec.suspend is set.
func (s *PaddleJobSpec) IsSuspended() bool { return s.Suspend != nil && *s.Suspend }

// IsManagedByOperator reports whether this operator runs the job: its
// spec.managedBy is unset or names the operator.
func (s *PaddleJobSpec) IsManagedByOperator() bool {
	return s.ManagedBy == nil || *s.ManagedBy == "" || *s.ManagedBy == ManagedByOperator
}

// KueueQueueName is the Kueue LocalQueue the job is sent to, or "".
func (j *PaddleJob) KueueQueueName() string { return j.Labels[KueueQueueNameLabel] }

// IsElastic reports whether the job's workers are elastic: spec.elastic > 0,
// spec.elasticPolicy, or paddle-operator's worker.limits.
func (s *PaddleJobSpec) IsElastic() bool {
	return (s.Elastic != nil && *s.Elastic > 0) || s.ElasticPolicy != nil || (s.Worker != nil && s.Worker.Limits != nil)
}

// ElasticBounds are the fewest and most workers of an elastic job:
// elasticPolicy's, else the worker role's requests and limits, else its
// replicas.
func (s *PaddleJobSpec) ElasticBounds() (minReplicas, maxReplicas int32) {
	n := int32(s.ReplicaCount(ReplicaWorker))
	minReplicas, maxReplicas = n, n
	if w := s.Worker; w != nil {
		if w.Requests != nil {
			minReplicas = *w.Requests
		}
		if w.Limits != nil {
			maxReplicas = *w.Limits
		}
	}
	if p := s.ElasticPolicy; p != nil {
		if p.MinReplicas != nil {
			minReplicas = *p.MinReplicas
		}
		if p.MaxReplicas != nil {
			maxReplicas = *p.MaxReplicas
		}
	}
	return minReplicas, maxReplicas
}

// IsRetryableExitCode reports whether an exit code recreates a pod of the
// role under restartPolicy ExitCode: one of retryableExitCodes, else
// 129-255 (the process was killed by a signal, as when it is preempted).
func (r *ReplicaSpec) IsRetryableExitCode(code int32) bool {
	if len(r.RetryableExitCodes) == 0 {
		return code > 128 && code <= 255
	}
	for _, c := range r.RetryableExitCodes {
		if c == code {
			return true
		}
	}
	return false
}

// The values of the enum fields, as their kubebuilder:validation:Enum
// markers list them (TestEnumListsMatchTheCRD holds the two together). The
// API server enforces the markers; code that checks a value before it gets
// there, such as the CLI's flags, checks it against these lists.
var (
	Intranets        = []Intranet{IntranetPodIP, IntranetService, IntranetHost}
	CleanPodPolicies = []CleanPodPolicy{CleanPodPolicyAlways, CleanPodPolicyNever, CleanPodPolicyOnFailure, CleanPodPolicyOnCompletion}
	RestartPolicies  = []RestartPolicy{RestartPolicyNever, RestartPolicyOnFailure, RestartPolicyExitCode}
	RestartScopes    = []RestartScope{RestartScopeJob, RestartScopePod}
)

// OneOf says which values an enum field takes: "A, B or C".
func OneOf[T ~string](values []T) string {
	out := ""
	for i, v := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			out += " or "
		default:
			out += ", "
		}
		out += string(v)
	}
	return out
}
