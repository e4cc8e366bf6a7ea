package controller

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Limits on how the job variables reach Paddle. A job that would exceed one
// is refused at admission (the webhook) or failed at once (the controller):
// accepted, it would hang, its pods unable to start.
const (
	// MaxEnvStringBytes is the kernel's limit on one environment string,
	// NAME=value with its terminating NUL (MAX_ARG_STRLEN): exec fails with
	// E2BIG past it.
	MaxEnvStringBytes = 131072
	// MaxEndpointsConfigMapBytes bounds the data of the job's endpoints
	// ConfigMap: the API server stores no object over 1 MiB, and the
	// object's metadata needs the rest.
	MaxEndpointsConfigMapBytes = 1000000
)

// ValidateEndpoints refuses a job whose endpoint lists cannot reach its
// pods: a list Paddle reads only from the environment that would exceed the
// kernel's limit, or endpoints that would not fit in the ConfigMap. The
// lists are measured at their longest (IPv4 addresses of 15 characters where
// pods are addressed by IP, their DNS names where by name: addressedByName;
// 5-digit ports) with the same code that builds them.
func ValidateEndpoints(spec *paddlev1.PaddleJobSpec, jobName string) field.ErrorList {
	env, cm := endpointSizes(spec, jobName)
	// One error per role, for its longest list: a role's lists grow
	// together, and the longest bounds how many pods fit.
	longest := map[paddlev1.ReplicaType]envSize{}
	for _, v := range env {
		if v.bytes > MaxEnvStringBytes && v.bytes > longest[v.role].bytes {
			longest[v.role] = v
		}
	}
	var errs field.ErrorList
	for _, rt := range paddlev1.ReplicaTypes {
		v, over := longest[rt]
		if !over {
			continue
		}
		errs = append(errs, field.Invalid(replicasPath(v.role), spec.ReplicaCount(v.role), fmt.Sprintf(
			"%s would be up to %d bytes, over the kernel's limit of %d bytes for one environment variable (%s); at most %d %s pods fit",
			v.name, v.bytes, MaxEnvStringBytes, envOnlyReader(v.name), maxFitting(spec, jobName, v.role, v.name), v.role)))
	}
	if cm > MaxEndpointsConfigMapBytes {
		errs = append(errs, field.Invalid(field.NewPath("spec"), fmt.Sprintf("%d pods", spec.TotalReplicas()), fmt.Sprintf(
			"the job's endpoint lists would take up to %d bytes, over the %d bytes its endpoints ConfigMap can hold (the API server stores no object over 1 MiB); use fewer pods or shorter names",
			cm, MaxEndpointsConfigMapBytes)))
	}
	return errs
}

// envOnlyReader says who needs a list in the environment, where no backup
// file can stand in for it.
func envOnlyReader(name string) string {
	switch name {
	case envLaunchTrainers, envLaunchServers:
		return "Paddle's launcher in parameter-server mode reads it only from its environment"
	}
	return "Paddle reads it only from the environment"
}

// envSize is the longest one environment string of a job variable can get,
// and the role whose replica count drives it.
type envSize struct {
	name  string
	role  paddlev1.ReplicaType
	bytes int
}

// listRoles says which role's pods a list variable enumerates.
var listRoles = map[string]paddlev1.ReplicaType{
	envPServerEndpoints:  paddlev1.ReplicaPS,
	envLaunchServers:     paddlev1.ReplicaPS,
	envTrainerEndpoints:  paddlev1.ReplicaWorker,
	envTrainerHosts:      paddlev1.ReplicaWorker,
	envLaunchTrainers:    paddlev1.ReplicaWorker,
	envPreviousHeter:     paddlev1.ReplicaWorker,
	envAllHeterEndpoints: paddlev1.ReplicaHeter,
	envHeterEndpoints20:  paddlev1.ReplicaHeter,
	envNextHeter:         paddlev1.ReplicaHeter,
}

// endpointSizes measures a job's variables at their longest: the
// environment strings of the list variables that go into the environment,
// and the data of the endpoints ConfigMap.
func endpointSizes(spec *paddlev1.PaddleJobSpec, jobName string) (env []envSize, configMap int) {
	values := jobEnv(spec, longestTopology(spec, jobName))
	inEnv := map[string]bool{}
	for _, rt := range paddlev1.ReplicaTypes {
		if spec.Replicas(rt) != nil {
			for _, n := range jobEnvNames(spec, rt) {
				inEnv[n] = true
			}
		}
	}
	for name, value := range values {
		configMap += len(name) + len(value)
		if role, isList := listRoles[name]; isList && inEnv[name] {
			env = append(env, envSize{name: name, role: role, bytes: len(name) + 1 + len(value) + 1})
		}
	}
	sort.Slice(env, func(i, j int) bool { return env[i].name < env[j].name })
	return env, configMap
}

// longestTopology is a job's topology with the longest addresses its pods
// can have: their DNS names in Service intranet, else 15-character IPv4
// addresses; every port has 5 digits.
func longestTopology(spec *paddlev1.PaddleJobSpec, jobName string) topology {
	topo := topology{}
	for _, rt := range paddlev1.ReplicaTypes {
		rs := spec.Replicas(rt)
		for i := 0; i < spec.ReplicaCount(rt); i++ {
			host := "255.255.255.255"
			if addressedByName(spec) {
				host = serviceHost(jobName, rt, i)
			}
			topo[rt] = append(topo[rt], member{Host: host, Ports: portRange{First: 65000, Count: portsPerPod(rs)}})
		}
	}
	return topo
}

// maxFitting is the most pods of role for which variable name still fits in
// one environment string.
func maxFitting(spec *paddlev1.PaddleJobSpec, jobName string, role paddlev1.ReplicaType, name string) int {
	fits := func(n int) bool {
		trial := spec.DeepCopy()
		trial.Replicas(role).Replicas = int32(n)
		env, _ := endpointSizes(trial, jobName)
		for _, v := range env {
			if v.name == name && v.bytes > MaxEnvStringBytes {
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

func replicasPath(rt paddlev1.ReplicaType) *field.Path {
	return field.NewPath("spec", string(rt), "replicas")
}
