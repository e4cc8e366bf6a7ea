package podcontract

import (
	"sort"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The endpoint lists measured at their longest, for validation's limits on
// them (internal/operator/validation, endpoints.go): a job whose lists would
// not fit is refused at admission or failed at once, never left hanging.

// MaxEnvStringBytes is the kernel's limit on one environment string,
// NAME=value with its terminating NUL (MAX_ARG_STRLEN): exec fails with
// E2BIG past it. A worker list over it stays out of the environment
// (WorkerListsInEnv).
const MaxEnvStringBytes = 131072

// EnvSize is the longest one environment string of a job variable can get.
type EnvSize struct {
	// Name is the variable; Role the role whose replica count drives it.
	Name string
	Role paddlev1.ReplicaType
	// Bytes counts NAME=value and its terminating NUL, as the kernel does.
	Bytes int
	// Reader says who reads it only from the environment, where no backup
	// file can stand in for it.
	Reader string
}

// envOnlyReader says who needs a list in the environment, where no backup
// file can stand in for it.
func envOnlyReader(name string) string {
	switch name {
	case EnvLaunchTrainers, EnvLaunchServers:
		return "Paddle's launcher in parameter-server mode reads it only from its environment"
	}
	return "Paddle reads it only from the environment"
}

// ListRoles says which role's pods a list variable enumerates.
var ListRoles = map[string]paddlev1.ReplicaType{
	EnvPServerEndpoints:  paddlev1.ReplicaPS,
	EnvLaunchServers:     paddlev1.ReplicaPS,
	EnvTrainerEndpoints:  paddlev1.ReplicaWorker,
	EnvTrainerHosts:      paddlev1.ReplicaWorker,
	EnvLaunchTrainers:    paddlev1.ReplicaWorker,
	EnvPreviousHeter:     paddlev1.ReplicaWorker,
	EnvAllHeterEndpoints: paddlev1.ReplicaHeter,
	EnvHeterEndpoints20:  paddlev1.ReplicaHeter,
	EnvNextHeter:         paddlev1.ReplicaHeter,
}

// EndpointSizes measures a job's variables at their longest (IPv4
// addresses of 15 characters where pods are addressed by IP, their DNS
// names where by name: AddressedByName; 5-digit ports) with the code that
// builds them: the environment strings of the list variables that go into
// the environment, and the data of the endpoints ConfigMap.
func EndpointSizes(spec *paddlev1.PaddleJobSpec, jobName string) (env []EnvSize, configMap int) {
	values := JobEnv(spec, LongestTopology(spec, jobName))
	inEnv := map[string]bool{}
	for _, rt := range paddlev1.ReplicaTypes {
		if spec.Replicas(rt) != nil {
			for _, n := range JobEnvNames(spec, rt) {
				inEnv[n] = true
			}
		}
	}
	for name, value := range values {
		configMap += len(name) + len(value)
		if role, isList := ListRoles[name]; isList && inEnv[name] {
			env = append(env, EnvSize{Name: name, Role: role, Bytes: EnvStringBytes(name, value), Reader: envOnlyReader(name)})
		}
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env, configMap
}

// LongestTopology is a job's topology with the longest addresses its pods
// can have: their DNS names in Service intranet, else 15-character IPv4
// addresses; every port has 5 digits.
func LongestTopology(spec *paddlev1.PaddleJobSpec, jobName string) Topology {
	topo := Topology{}
	for _, rt := range paddlev1.ReplicaTypes {
		rs := spec.Replicas(rt)
		for i := 0; i < spec.ReplicaCount(rt); i++ {
			host := "255.255.255.255"
			if AddressedByName(spec) {
				host = ServiceHost(jobName, rt, i)
			}
			topo[rt] = append(topo[rt], Member{Host: host, Ports: PortRange{First: 65000, Count: PortsPerPod(rs)}})
		}
	}
	return topo
}
