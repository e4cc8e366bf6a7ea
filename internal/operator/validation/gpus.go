package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// MaxGPUsPerPod bounds the nvidia.com/gpu a pod may ask for
// (podcontract.MaxGPUsPerPod).
const MaxGPUsPerPod = podcontract.MaxGPUsPerPod

// gpuResource is the resource the operator counts a pod's GPUs by.
const gpuResource = podcontract.GPUResource

// validateGPUs refuses a role whose pods ask for more than MaxGPUsPerPod
// nvidia.com/gpu, per container (its limit, else its request) or in sum,
// or for a negative count.
func validateGPUs(spec *paddlev1.PaddleJobSpec) field.ErrorList {
	var errs field.ErrorList
	limit := resource.NewQuantity(MaxGPUsPerPod, resource.DecimalSI)
	why := "every GPU of a pod takes one of its ports (PADDLE_PORTS_NUM)"
	eachRole(spec, func(_ paddlev1.ReplicaType, rs *paddlev1.ReplicaSpec, podSpec *field.Path) {
		containers := podSpec.Child("containers")
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
				errs = append(errs, field.Invalid(path, q.String(), fmt.Sprintf("must be 0-%d, not negative", MaxGPUsPerPod)))
			case q.Cmp(*limit) > 0:
				errs = append(errs, field.Invalid(path, q.String(), fmt.Sprintf("must be at most %d: %s", MaxGPUsPerPod, why)))
			default:
				sum += q.Value()
			}
		}
		if sum > MaxGPUsPerPod {
			errs = append(errs, field.Invalid(containers, fmt.Sprintf("%d %s", sum, gpuResource), fmt.Sprintf(
				"the containers of a pod ask for %d %s in all; at most %d: %s", sum, gpuResource, MaxGPUsPerPod, why)))
		}
	})
	return errs
}
