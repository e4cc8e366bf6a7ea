package podcontract

import (
	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Start-up order of a parameter-server job (the controller's startorder.go
// probes the servers and releases their clients): which pods serve and which
// wait.

// IsServerRole reports whether pods of a role run servers other pods connect
// to at start-up.
func IsServerRole(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) bool {
	return spec.PS != nil && (rt == paddlev1.ReplicaPS || rt == paddlev1.ReplicaHeter)
}

// ServersOf are the roles whose servers pods of rt wait for: workers wait
// for the parameter servers and the heter trainers, heter trainers for the
// parameter servers.
func ServersOf(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) []paddlev1.ReplicaType {
	if spec.PS == nil {
		return nil
	}
	switch rt {
	case paddlev1.ReplicaWorker:
		if spec.Heter != nil {
			return []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaHeter}
		}
		return []paddlev1.ReplicaType{paddlev1.ReplicaPS}
	case paddlev1.ReplicaHeter:
		return []paddlev1.ReplicaType{paddlev1.ReplicaPS}
	}
	return nil
}

// PodWaits reports whether pods of a role start behind the wait init
// container: every pod where addresses are IPs (they wait for the lists),
// and pods that wait for servers.
func PodWaits(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) bool {
	return Pod{WaitsForEndpoints: WaitsForEndpoints(spec), WaitsForServers: ServersOf(spec, rt)}.Waits()
}
