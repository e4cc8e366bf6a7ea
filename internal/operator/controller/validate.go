package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// What a job must satisfy beyond its schema, for the webhook (which refuses
// it) and the controller (which fails it): api/v1's ValidateSpec, the
// bounds the port arithmetic needs, and the endpoint limits.

// MaxGPUsPerPod bounds the nvidia.com/gpu a pod may ask for: every GPU
// takes one of the pod's process ports (ports.go), so the count must keep
// a pod's port range small and within 1-65535. No node carries more.
const MaxGPUsPerPod = 1024

// Validate is every check of a job's spec the schema cannot make.
func Validate(spec *paddlev1.PaddleJobSpec, jobName string) field.ErrorList {
	errs := append(paddlev1.ValidateSpec(spec), ValidateGPUs(spec)...)
	if len(errs) > 0 {
		// The endpoint sizes are measured from the ports the GPUs size.
		return errs
	}
	return ValidateEndpoints(spec, jobName)
}

// ValidateGPUs refuses a role whose pods ask for more than MaxGPUsPerPod
// nvidia.com/gpu, per container or in sum, or for a negative count.
func ValidateGPUs(spec *paddlev1.PaddleJobSpec) field.ErrorList {
	var errs field.ErrorList
	limit := resource.NewQuantity(MaxGPUsPerPod, resource.DecimalSI)
	for _, rt := range paddlev1.ReplicaTypes {
		rs := spec.Replicas(rt)
		if rs == nil {
			continue
		}
		containers := field.NewPath("spec", string(rt), "template", "spec", "containers")
		var sum int64
		for i, c := range rs.Template.Spec.Containers {
			q, kind := c.Resources.Limits[gpuResource], "limits"
			if _, ok := c.Resources.Limits[gpuResource]; !ok {
				var ok bool
				if q, ok = c.Resources.Requests[gpuResource]; !ok {
					continue
				}
				kind = "requests"
			}
			path := containers.Index(i).Child("resources", kind).Key(string(gpuResource))
			switch {
			case q.Sign() < 0:
				errs = append(errs, field.Invalid(path, q.String(), "must not be negative"))
			case q.Cmp(*limit) > 0:
				errs = append(errs, field.Invalid(path, q.String(), fmt.Sprintf(
					"must be at most %d: every GPU of a pod takes one of its ports (PADDLE_PORTS_NUM)", MaxGPUsPerPod)))
			default:
				sum += q.Value()
			}
		}
		if sum > MaxGPUsPerPod {
			errs = append(errs, field.Invalid(containers, fmt.Sprintf("%d %s", sum, gpuResource), fmt.Sprintf(
				"the containers of a pod ask for %d %s in all; at most %d: every GPU of a pod takes one of its ports (PADDLE_PORTS_NUM)", sum, gpuResource, MaxGPUsPerPod)))
		}
	}
	return errs
}
