package v1

import (
	"fmt"

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

// EffectiveIntranet is spec.intranet, PodIP when unset.
func (s *PaddleJobSpec) EffectiveIntranet() Intranet {
	if s.Intranet == "" {
		return IntranetPodIP
	}
	return s.Intranet
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

// PodName is the name of the pod of a role and index: <job>-<role>-<index>.
func PodName(job string, rt ReplicaType, index int) string {
	return fmt.Sprintf("%s-%s-%d", job, rt, index)
}
