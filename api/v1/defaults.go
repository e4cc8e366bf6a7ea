package v1

// The defaults of a PaddleJob's spec, in one place. The constant ones are
// also the CRD's default markers (kubectl explain shows them; the API server
// applies them, TestDefaultsMatchTheCRD holds the two together); the ones
// that depend on other fields are SetDefaults' alone.
const (
	// DefaultIntranet is spec.intranet when unset.
	DefaultIntranet = IntranetPodIP
	// DefaultBackoffLimit is spec.backoffLimit when unset.
	DefaultBackoffLimit int32 = 6
)

// SetDefaults fills in every field of the spec a job's behaviour depends on
// that its author left unset, so the stored job says what will happen. The
// operator's admission webhook applies it to each job it admits; the
// operator, the CLI and the dashboard apply it to the copy they read, for a
// job stored without the webhook (an API server that does not call it, a
// job stored by an earlier release), and so act on the same values.
//
// The deprecated spec.cleanPolicy is an alias, not a default: it is left as
// written and EffectiveCleanPodPolicy resolves it.
func (s *PaddleJobSpec) SetDefaults() {
	if s.Intranet == "" {
		s.Intranet = DefaultIntranet
	}
	if s.BackoffLimit == nil {
		limit := DefaultBackoffLimit
		s.BackoffLimit = &limit
	}
	for _, rt := range ReplicaTypes {
		if r := s.Replicas(rt); r != nil && r.RestartPolicy == "" {
			r.RestartPolicy = s.defaultRestartPolicy(rt)
		}
	}
	if s.RestartScope == "" {
		s.RestartScope = s.defaultRestartScope()
	}
}

// defaultRestartPolicy is a role's restart policy when unset: OnFailure
// when its template restarts containers on failure or it is the worker role
// of an elastic job, else Never.
func (s *PaddleJobSpec) defaultRestartPolicy(rt ReplicaType) RestartPolicy {
	switch {
	case s.Replicas(rt).Template.Spec.RestartPolicy == "OnFailure":
		return RestartPolicyOnFailure
	case rt == ReplicaWorker && s.IsElastic():
		return RestartPolicyOnFailure
	}
	return RestartPolicyNever
}

// defaultRestartScope is spec.restartScope when unset: Job for a
// parameter-server job that is not elastic, Pod otherwise.
func (s *PaddleJobSpec) defaultRestartScope() RestartScope {
	if s.PS != nil && !s.IsElastic() {
		return RestartScopeJob
	}
	return RestartScopePod
}

// Defaulted is a copy of the job with SetDefaults applied: what the
// operator acts on.
func (j *PaddleJob) Defaulted() *PaddleJob {
	out := j.DeepCopy()
	out.Spec.SetDefaults()
	return out
}
