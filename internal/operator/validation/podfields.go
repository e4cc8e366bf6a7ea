package validation

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Change is what a running job does when a field that shapes its pods
// changes.
type Change int

const (
	// Fixed: the live pods cannot follow, and a job never mixes pods made
	// from two values. The webhook refuses the change while the job runs
	// unsuspended (ValidateUpdate); without the webhook the operator makes
	// no pod from the new value while a pod of the old one lives (SpecHash).
	// Suspending and resuming the job applies it.
	Fixed Change = iota
	// Scaled: the operator adds or deletes pods and republishes the
	// endpoint lists every pod reads.
	Scaled
	// NewPods: the pods created afterwards follow it; the live ones keep
	// theirs, which the job tolerates.
	NewPods
)

// PodField is a field of the spec that shapes the job's pods.
type PodField struct {
	// Path names the field; "<role>" stands for each role the job has.
	Path string
	// Of is what of the field the pods of role rt are made from: its
	// effective value, defaults applied.
	Of func(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) any
	// Change is what a running job does when it changes.
	Change Change
	// Name is what conditions call the field, when not its Path.
	Name string
	// Refusal replaces the webhook's refusal of a Fixed field's change.
	Refusal string
}

// PodFields are every field of the spec that shapes a job's pods (their
// template, environment, network, scheduling or restart policy), the one
// declaration both ValidateUpdate and SpecHash are derived from. A test
// (TestPodFieldsCoverThePods, internal/operator/controller) changes every
// field of the spec and fails when one that changes the pods the operator
// makes is missing here. New Fixed fields are appended: a pod records one
// hash per Fixed field in this order (SpecHash).
var PodFields = []PodField{
	{Path: "spec.<role>.template", Change: Fixed, Of: func(s *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) any {
		if rs := s.Replicas(rt); rs != nil {
			return rs.Template
		}
		return nil
	}},
	{Path: "spec.intranet", Change: Fixed, Of: job(func(s *paddlev1.PaddleJobSpec) paddlev1.Intranet { return s.Intranet })},
	{Path: "spec.withGloo", Change: Fixed, Of: job((*paddlev1.PaddleJobSpec).GlooLevel)},
	{Path: "spec.schedulingPolicy", Change: Fixed, Of: job(func(s *paddlev1.PaddleJobSpec) *paddlev1.SchedulingPolicy { return s.SchedulingPolicy })},
	// The roles: a role added or removed changes the others' environment
	// (the endpoint lists, heter stages, the mode).
	{Path: "spec", Name: "the roles (spec.ps, spec.worker, spec.heter)", Change: Fixed, Of: job(roles), Refusal: "roles (spec.ps, spec.worker, spec.heter) may not be added or removed once the job has started; suspend it first (spec.suspend), or delete and recreate it"},
	// The elastic fields: PADDLE_MASTER, PADDLE_NNODES=min:max, the elastic
	// level, timeout and restart policy every pod's launcher runs with.
	{Path: "spec.elastic", Change: Fixed, Of: job(func(s *paddlev1.PaddleJobSpec) int32 { return deref(s.Elastic) })},
	{Path: "spec.elasticPolicy", Change: Fixed, Of: job(func(s *paddlev1.PaddleJobSpec) *paddlev1.ElasticPolicy { return s.ElasticPolicy })},
	{Path: "spec.worker.requests", Change: Fixed, Of: job(func(s *paddlev1.PaddleJobSpec) int32 { return deref(workerBound(s, true)) })},
	{Path: "spec.worker.limits", Change: Fixed, Of: job(func(s *paddlev1.PaddleJobSpec) int32 { return deref(workerBound(s, false)) })},

	{Path: "spec.<role>.replicas", Change: Scaled, Of: func(s *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) any { return s.ReplicaCount(rt) }},
	// The pod's restartPolicy (OnFailure restarts in place).
	{Path: "spec.<role>.restartPolicy", Change: NewPods, Of: func(s *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) any {
		if rs := s.Replicas(rt); rs != nil {
			return rs.RestartPolicy
		}
		return nil
	}},
	{Path: "spec.restartScope", Change: NewPods, Of: job(func(s *paddlev1.PaddleJobSpec) paddlev1.RestartScope { return s.RestartScope })},
	// An elastic launcher's restart budget (PADDLE_MAX_RESTART).
	{Path: "spec.backoffLimit", Change: NewPods, Of: job(func(s *paddlev1.PaddleJobSpec) int32 { return deref(s.BackoffLimit) })},
}

// job adapts a job-wide field's getter to PodField.Of.
func job[T any](get func(*paddlev1.PaddleJobSpec) T) func(*paddlev1.PaddleJobSpec, paddlev1.ReplicaType) any {
	return func(s *paddlev1.PaddleJobSpec, _ paddlev1.ReplicaType) any { return get(s) }
}

func roles(s *paddlev1.PaddleJobSpec) []paddlev1.ReplicaType {
	var out []paddlev1.ReplicaType
	for _, rt := range paddlev1.ReplicaTypes {
		if s.Replicas(rt) != nil {
			out = append(out, rt)
		}
	}
	return out
}

func workerBound(s *paddlev1.PaddleJobSpec, lower bool) *int32 {
	switch {
	case s.Worker == nil:
		return nil
	case lower:
		return s.Worker.Requests
	}
	return s.Worker.Limits
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// perRole reports whether the field is one per role.
func (f PodField) perRole() bool { return strings.Contains(f.Path, "<role>") }

// path is the field's path for role rt.
func (f PodField) path(rt paddlev1.ReplicaType) *field.Path {
	parts := strings.Split(strings.ReplaceAll(f.Path, "<role>", string(rt)), ".")
	return field.NewPath(parts[0], parts[1:]...)
}

// fixedFields are the Fixed fields that shape pods, in declaration order.
var fixedFields = sync.OnceValue(func() []PodField {
	var fields []PodField
	for _, f := range PodFields {
		if f.Change == Fixed {
			fields = append(fields, f)
		}
	}
	return fields
})

// fixedName is the name of a Fixed field of role rt in messages.
func fixedName(f PodField, rt paddlev1.ReplicaType) string {
	if f.Name != "" {
		return f.Name
	}
	return f.path(rt).String()
}

// validatePodFieldsUnchanged refuses a change to a Fixed field of a job
// whose pods were made from it: one that has started and is not suspended
// before or after the change. A suspended job has no pods to disagree with
// its spec: it may change in the update that suspends or resumes it, as
// Kueue's stop and start do (restoring and injecting the templates'
// scheduling fields).
func validatePodFieldsUnchanged(old, updated *paddlev1.PaddleJob) field.ErrorList {
	if old.Status.StartTime == nil && old.Status.Phase == "" {
		return nil // nothing was made from the spec yet
	}
	if old.Spec.IsSuspended() || updated.Spec.IsSuspended() {
		return nil
	}
	// Compared as the operator reads them: a field left unset on one side
	// and set to its default on the other is no change.
	old, updated = old.Defaulted(), updated.Defaulted()
	var errs field.ErrorList
	for _, f := range PodFields {
		if f.Change != Fixed {
			continue
		}
		msg := "may not change once the job has started; suspend it first (spec.suspend), or delete and recreate it"
		if f.Refusal != "" {
			msg = f.Refusal
		}
		if !f.perRole() {
			if !reflect.DeepEqual(f.Of(&old.Spec, ""), f.Of(&updated.Spec, "")) {
				errs = append(errs, field.Forbidden(f.path(""), msg))
			}
			continue
		}
		for _, rt := range paddlev1.ReplicaTypes {
			// A role added or removed is the roles' change, refused once.
			if old.Spec.Replicas(rt) != nil && updated.Spec.Replicas(rt) != nil &&
				!reflect.DeepEqual(f.Of(&old.Spec, rt), f.Of(&updated.Spec, rt)) {
				errs = append(errs, field.Forbidden(f.path(rt), msg))
			}
		}
	}
	return errs
}

// SpecHash identifies what the pods of role rt are made from: one short
// hash per Fixed field (its value for rt), in PodFields' order, joined by
// '.'. Pods record it (paddlev1.AnnotationSpecHash) so that the operator,
// webhook or not, makes no pod of a changed spec while a pod of the old one
// lives (ChangedFields).
func SpecHash(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) string {
	fields := fixedFields()
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = hashOf(f.Of(spec, rt))
	}
	return strings.Join(parts, ".")
}

func hashOf(v any) string {
	data, _ := json.Marshal(v) // plain API types: always marshal
	h := fnv.New32a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%08x", h.Sum32())
}

// ChangedFields names the Fixed fields whose value differs between a hash a
// pod of role rt recorded and the spec now. A hash in another format (an
// older operator's "<template>-<job>") is trusted, as a pod that recorded
// none is: nothing is named. A hash of fewer fields (made before fields
// were appended) is compared on those it has.
func ChangedFields(recorded string, spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) []string {
	if strings.Contains(recorded, "-") {
		return nil
	}
	hash := SpecHash(spec, rt)
	if recorded == hash {
		return nil
	}
	was, now := strings.Split(recorded, "."), strings.Split(hash, ".")
	fields := fixedFields()
	var changed []string
	for i := 0; i < len(was) && i < len(now); i++ {
		if was[i] != now[i] {
			changed = append(changed, fixedName(fields[i], rt))
		}
	}
	return changed
}
