package controller

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
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
	errs = append(errs, ValidateTemplates(spec)...)
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

// tunableEnv are the contract variables a template may set to tune, not
// break, the job: the GPUs a process selects, the collective backend,
// POD_IP, which the docs suggest taking from the downward API, and an
// elastic launcher's restart budget. Setting one is warned about; setting
// any other contract variable is refused.
var tunableEnv = map[string]bool{"FLAGS_selected_gpus": true, "PADDLE_DISTRI_BACKEND": true, "POD_IP": true, "PADDLE_MAX_RESTART": true}

// contractEnvNames are the variables the operator gives a role's pods (the
// environment contract, env.go): pod and job variables alike, taken from
// the code that sets them.
func contractEnvNames(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) map[string]bool {
	job := &paddlev1.PaddleJob{Spec: *spec}
	names := map[string]bool{}
	for _, e := range podEnv(job, rt, 0, portRange{First: DefaultBasePort, Count: portsPerPod(spec.Replicas(rt))}, []string{"http://etcd:2379"}) {
		names[e.Name] = true
	}
	for _, n := range jobEnvNames(spec, rt) {
		names[n] = true
	}
	return names
}

// ValidateTemplates refuses what a template would override of the job's
// contract: a variable the operator sets (two workers with one
// PADDLE_TRAINER_ID, a PADDLE_MASTER no pod serves), and the host network
// outside Host intranet (the ports each pod owns would clash on a node).
func ValidateTemplates(spec *paddlev1.PaddleJobSpec) field.ErrorList {
	var errs field.ErrorList
	for _, rt := range paddlev1.ReplicaTypes {
		rs := spec.Replicas(rt)
		if rs == nil {
			continue
		}
		path := field.NewPath("spec", string(rt), "template", "spec")
		if rs.Template.Spec.HostNetwork && !onHostNetwork(spec) {
			errs = append(errs, field.Invalid(path.Child("hostNetwork"), true, fmt.Sprintf(
				"the host network is for Host intranet only (spec.intranet is %s): there the operator sets it and hands each pod host ports of its own; set spec.intranet: Host or remove hostNetwork",
				spec.EffectiveIntranet())))
		}
		contract := contractEnvNames(spec, rt)
		eachEnv(rs, path, func(p *field.Path, e corev1.EnvVar) {
			switch {
			case spec.IsElastic() && slices.Contains(elasticRankNames, e.Name):
				errs = append(errs, field.Invalid(p.Child("name"), e.Name,
					"would fix the worker's rank, which Paddle's elastic launcher gives each live worker itself: with a fixed rank the launcher fails (IndexError in sync_peers) once a worker of a lower rank is gone; remove it"))
			case contract[e.Name] && !tunableEnv[e.Name]:
				errs = append(errs, field.Invalid(p.Child("name"), e.Name,
					"is set by the operator (the environment contract, docs/env-contract.md): a template's value would override it and break the job; remove it"))
			}
		})
	}
	return errs
}

// TemplateWarnings name what in the templates looks odd without breaking
// the job: a tunable contract variable set, a fixed port on the host network.
func TemplateWarnings(spec *paddlev1.PaddleJobSpec) []string {
	var out []string
	for _, rt := range paddlev1.ReplicaTypes {
		rs := spec.Replicas(rt)
		if rs == nil {
			continue
		}
		path := field.NewPath("spec", string(rt), "template", "spec")
		contract := contractEnvNames(spec, rt)
		eachEnv(rs, path, func(p *field.Path, e corev1.EnvVar) {
			if !contract[e.Name] || !tunableEnv[e.Name] {
				return
			}
			if e.Name == "POD_IP" && !addressedByName(spec) && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
				return // what the operator sets too
			}
			out = append(out, fmt.Sprintf("%s sets %s, which the operator sets too: the template's value wins", p.Child("name"), e.Name))
		})
		if !onHostNetwork(spec) {
			continue
		}
		for i, c := range rs.Template.Spec.Containers {
			for j, p := range c.Ports {
				if p.ContainerPort != 0 {
					out = append(out, fmt.Sprintf("%s is %d: in Host intranet it is a port of the node, and two pods of the job on one node would clash on it; use the ports the operator hands out (PADDLE_PORT, PADDLE_PORTS_NUM)",
						path.Child("containers").Index(i).Child("ports").Index(j).Child("containerPort"), p.ContainerPort))
				}
			}
		}
	}
	return out
}

// eachEnv calls fn on every variable of a role's containers and init
// containers, with its path.
func eachEnv(rs *paddlev1.ReplicaSpec, path *field.Path, fn func(*field.Path, corev1.EnvVar)) {
	for _, list := range []struct {
		kind string
		cs   []corev1.Container
	}{{"initContainers", rs.Template.Spec.InitContainers}, {"containers", rs.Template.Spec.Containers}} {
		kind := list.kind
		for i, c := range list.cs {
			for j, e := range c.Env {
				fn(path.Child(kind).Index(i).Child("env").Index(j), e)
			}
		}
	}
}
