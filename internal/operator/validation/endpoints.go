package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// Limits on how the job variables reach Paddle. A job that would exceed one
// is refused: accepted, it would hang, its pods unable to start.
const (
	// MaxEnvStringBytes is the kernel's limit on one environment string
	// (podcontract.MaxEnvStringBytes).
	MaxEnvStringBytes = podcontract.MaxEnvStringBytes
	// MaxEndpointsConfigMapBytes bounds the data of the job's endpoints
	// ConfigMap: the API server stores no object over 1 MiB, and the
	// object's metadata needs the rest.
	MaxEndpointsConfigMapBytes = 1000000
)

// validateEndpoints refuses a job whose endpoint lists cannot reach its
// pods: a list Paddle reads only from the environment that would exceed the
// kernel's limit, or endpoints that would not fit in the ConfigMap. The pod
// contract measures the lists at their longest with the code that builds
// them (podcontract.EndpointSizes).
func (v *Validator) validateEndpoints(spec *paddlev1.PaddleJobSpec, jobName string) field.ErrorList {
	env, cm := podcontract.EndpointSizes(spec, jobName)
	// One error per role, for its longest list: a role's lists grow
	// together, and the longest bounds how many pods fit.
	longest := map[paddlev1.ReplicaType]EnvSize{}
	for _, s := range env {
		if s.Bytes > MaxEnvStringBytes && s.Bytes > longest[s.Role].Bytes {
			longest[s.Role] = s
		}
	}
	var errs field.ErrorList
	for _, rt := range paddlev1.ReplicaTypes {
		s, over := longest[rt]
		if !over {
			continue
		}
		errs = append(errs, field.Invalid(field.NewPath("spec", string(rt), "replicas"), spec.ReplicaCount(rt), fmt.Sprintf(
			"%s would be up to %d bytes, over the kernel's limit of %d bytes for one environment variable (%s); at most %d %s pods fit",
			s.Name, s.Bytes, MaxEnvStringBytes, s.Reader, v.maxFitting(spec, jobName, rt, s.Name), rt)))
	}
	if cm > MaxEndpointsConfigMapBytes {
		errs = append(errs, field.Invalid(field.NewPath("spec"), fmt.Sprintf("%d pods", spec.TotalReplicas()), fmt.Sprintf(
			"the job's endpoint lists would take up to %d bytes, over the %d bytes its endpoints ConfigMap can hold (the API server stores no object over 1 MiB); use fewer pods or shorter names",
			cm, MaxEndpointsConfigMapBytes)))
	}
	return errs
}

// maxFitting is the most pods of role for which variable name still fits in
// one environment string.
func (v *Validator) maxFitting(spec *paddlev1.PaddleJobSpec, jobName string, role paddlev1.ReplicaType, name string) int {
	fits := func(n int) bool {
		trial := spec.DeepCopy()
		trial.Replicas(role).Replicas = int32(n)
		env, _ := podcontract.EndpointSizes(trial, jobName)
		for _, s := range env {
			if s.Name == name && s.Bytes > MaxEnvStringBytes {
				return false
			}
		}
		return true
	}
	lo, hi := 0, spec.ReplicaCount(role) // fits(lo), !fits(hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
