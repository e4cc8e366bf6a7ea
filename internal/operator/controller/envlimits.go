package controller

import (
	"sort"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
)

// The endpoint lists measured at their longest, for validation's limits on
// them (validation/endpoints.go): a job whose lists would not fit is
// refused at admission or failed at once, never left hanging.

// MaxEnvStringBytes is the kernel's limit on one environment string
// (validation.MaxEnvStringBytes): a worker list over it stays out of the
// environment (workerListsInEnv).
const MaxEnvStringBytes = validation.MaxEnvStringBytes

// envOnlyReader says who needs a list in the environment, where no backup
// file can stand in for it.
func envOnlyReader(name string) string {
	switch name {
	case envLaunchTrainers, envLaunchServers:
		return "Paddle's launcher in parameter-server mode reads it only from its environment"
	}
	return "Paddle reads it only from the environment"
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

// endpointSizes measures a job's variables at their longest (IPv4
// addresses of 15 characters where pods are addressed by IP, their DNS
// names where by name: addressedByName; 5-digit ports) with the code that
// builds them: the environment strings of the list variables that go into
// the environment, and the data of the endpoints ConfigMap.
func endpointSizes(spec *paddlev1.PaddleJobSpec, jobName string) (env []validation.EnvSize, configMap int) {
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
			env = append(env, validation.EnvSize{Name: name, Role: role, Bytes: envStringBytes(name, value), Reader: envOnlyReader(name)})
		}
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
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
