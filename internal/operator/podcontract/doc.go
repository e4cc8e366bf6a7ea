// Package podcontract is the PaddleJob pod contract: what the operator gives
// each pod of a job so that an unmodified Paddle program finds its peers
// (docs/env-contract.md), as pure functions of the job's spec and the
// operator's settings — no client, no I/O. The controller builds its pods
// from it; the checks of a job (internal/operator/validation, shared by the
// admission webhook and `paddlejob validate`) measure against it, so neither
// holds a copy that could drift. It imports no other operator package.
//
//	pod.go        one pod's whole contract (ForPod), which the pod builder applies
//	env.go        the environment: pod variables, job variables, the backup
//	              file, and a role's first pod's (FirstPodEnv)
//	ports.go      a pod's port range and its layout; GPUs per pod
//	endpoints.go  the endpoints ConfigMap's name, data and version
//	envlimits.go  the endpoint lists measured at their longest (EndpointSizes)
//	gloo.go       the Gloo rendezvous and level of each role
//	intranet.go   how pods address each other (POD_IP, DNS names)
//	elastic.go    an elastic job's launcher variables
//	startorder.go which roles serve and which wait at start-up
//	gang.go       the gang scheduler a job gets (GangScheduler)
package podcontract
