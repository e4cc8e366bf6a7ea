package podcontract

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The environment contract (docs/env-contract.md): what every container of a
// job needs so that an unmodified Paddle program finds its peers, whichever
// Paddle entry point it uses — fleet's PaddleCloudRoleMaker run directly,
// `python -m paddle.distributed.launch` (collective, parameter server or
// elastic), or paddle.distributed.init_parallel_env. Each variable below is
// read by at least one of them; docs/env-contract.md says which.
//
// Variables fall in two kinds:
//
//   - pod variables, fixed when the pod is created: its role, index, ports
//     and everything known from the spec alone;
//   - job variables, the same on every pod: endpoint lists and counts. They
//     depend on every pod's address, so in PodIP and Host intranet they are
//     only known once every pod has an IP. They are published in the job's
//     endpoints ConfigMap and pods read them through configMapKeyRef once
//     published (the controller's endpoints.go); in Service intranet the addresses are DNS
//     names known up front, published before the pods.

// Training roles as Paddle spells them.
var trainingRoles = map[paddlev1.ReplicaType]string{
	paddlev1.ReplicaPS:     "PSERVER",
	paddlev1.ReplicaWorker: "TRAINER",
	paddlev1.ReplicaHeter:  "HETER_TRAINER",
}

// Member is one pod of the job as the endpoint lists see it.
type Member struct {
	// Host is the pod's address: its IP, or its DNS name in Service intranet.
	// Empty while unknown.
	Host  string
	Ports PortRange
}

func (m Member) Endpoint() string { return m.Host + ":" + strconv.Itoa(int(m.Ports.First)) }

// Topology is every pod of the job, by role, in index order.
type Topology map[paddlev1.ReplicaType][]Member

func (t Topology) Endpoints(rt paddlev1.ReplicaType) string {
	out := make([]string, len(t[rt]))
	for i, m := range t[rt] {
		out[i] = m.Endpoint()
	}
	return strings.Join(out, ",")
}

func (t Topology) Hosts(rt paddlev1.ReplicaType) string {
	out := make([]string, len(t[rt]))
	for i, m := range t[rt] {
		out[i] = m.Host
	}
	return strings.Join(out, ",")
}

// MissingHosts names the pods whose address is not known yet.
func (t Topology) MissingHosts(job string) []string {
	var out []string
	for _, rt := range paddlev1.ReplicaTypes {
		for i, m := range t[rt] {
			if m.Host == "" {
				out = append(out, paddlev1.PodName(job, rt, i))
			}
		}
	}
	return out
}

// rendezvousRole is the role whose pod 0 hosts PADDLE_MASTER and the Gloo
// store: ps-0 in parameter-server mode, worker-0 otherwise.
func rendezvousRole(spec *paddlev1.PaddleJobSpec) paddlev1.ReplicaType {
	if spec.PS != nil {
		return paddlev1.ReplicaPS
	}
	return paddlev1.ReplicaWorker
}

// Names of the job variables.
const (
	EnvNNodes            = "PADDLE_NNODES"
	EnvTrainers          = "TRAINERS"
	EnvMaster            = "PADDLE_MASTER"
	EnvPServerEndpoints  = "PADDLE_PSERVERS_IP_PORT_LIST"
	EnvTrainerEndpoints  = "PADDLE_TRAINER_ENDPOINTS"
	EnvTrainerHosts      = "PADDLE_TRAINERS"
	EnvTrainersNum       = "PADDLE_TRAINERS_NUM"
	EnvLaunchServers     = "PADDLE_SERVERS_ENDPOINTS"
	EnvLaunchTrainers    = "PADDLE_TRAINERS_ENDPOINTS"
	EnvLaunchGlooPort    = "PADDLE_GLOO_PORT"
	EnvAllHeterEndpoints = "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"
	EnvHeterEndpoints20  = "PADDLE_HETER_TRAINER_IP_PORT_LIST"
	EnvPreviousHeter     = "PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST"
	EnvNextHeter         = "PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"
	EnvStageTrainersNum  = "PADDLE_STAGE_TRAINERS_NUM"
	EnvGlooHTTPEndpoint  = "PADDLE_GLOO_HTTP_ENDPOINT"
)

// Paddle's backup environment: PADDLE_BACKUP_ENV_PATH names a JSON file of
// variables that Paddle reads (paddle.distributed.backup_env) when they are
// not in the environment. The operator always writes the worker endpoint list
// to it, and leaves the lists out of the environment where their presence
// would mislead Paddle's launcher or where a list is too long for one
// environment string (see WorkerListsInEnv). Paddle's own launcher moves a
// PADDLE_TRAINER_ENDPOINTS of 48,000 characters or more
// (PADDLE_ENV_LIMIT_LEN's default) out of its children's environment into a
// backup file of its own, so the lists may reach the launcher at any size
// the kernel takes.
const (
	EnvBackupPath = "PADDLE_BACKUP_ENV_PATH"
	BackupEnvKey  = "backup_env.json"
)

// workerListNames are the worker lists that are in the environment only when
// WorkerListsInEnv says so; PADDLE_TRAINER_ENDPOINTS is also always in the
// backup file.
var workerListNames = []string{EnvTrainerEndpoints, EnvTrainerHosts, EnvLaunchTrainers}

// WorkerListsInEnv reports whether the worker lists go into the environment.
//
// A parameter-server job always has them: Paddle's PS launcher starts each
// pod's own process only with PADDLE_SERVERS_ENDPOINTS and
// PADDLE_TRAINERS_ENDPOINTS in its environment (launch/controllers/ps.py,
// build_pod), which it never reads from a file, and otherwise falls back to
// a rendezvous where every pod starts a server and a trainer. With both
// lists it never uses its master, so the lists mislead it nowhere, Host
// intranet included (where pods sharing a node meet another limit of the
// launcher: see docs/env-contract.md). A job whose list would not fit in
// one environment string is refused (internal/operator/validation), as are
// elastic parameter-server jobs (the CRD schema).
//
// A collective launcher, seeing PADDLE_TRAINER_ENDPOINTS in its environment,
// ignores PADDLE_MASTER and PADDLE_NNODES: it takes the first endpoint as its
// master and counts nodes as the list's distinct hosts
// (launch/plugins/__init__.py, collective_compatible). That is right where
// every pod has an address of its own, wrong where pods share the node's
// address (Host intranet: two workers on one node would count as one node
// and wait for a peer that never comes) and for elastic jobs (whose master is
// etcd): there the lists stay out, as they do when they would not fit in one
// environment string, and Paddle reads PADDLE_TRAINER_ENDPOINTS from the
// backup file while the launcher meets at PADDLE_MASTER.
func WorkerListsInEnv(spec *paddlev1.PaddleJobSpec, trainerEndpoints string) bool {
	if spec.IsElastic() {
		return false
	}
	if spec.PS != nil {
		return true
	}
	return !OnHostNetwork(spec) && EnvStringBytes(EnvTrainerEndpoints, trainerEndpoints) <= MaxEnvStringBytes
}

// EnvStringBytes is the size of one environment string as the kernel counts
// it: NAME=value and its terminating NUL.
func EnvStringBytes(name, value string) int { return len(name) + 1 + len(value) + 1 }

// JobEnvNames lists the job variables a pod of a role receives, in the order
// they are added to its containers. Each is read from the endpoints
// ConfigMap, optionally: a variable the ConfigMap leaves out is not set.
func JobEnvNames(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) []string {
	names := []string{EnvTrainers, EnvTrainersNum, EnvTrainerEndpoints, EnvTrainerHosts}
	if !spec.IsElastic() {
		// An elastic job's master and node count are pod variables.
		names = append(names, EnvNNodes, EnvMaster)
	}
	if spec.PS != nil {
		names = append(names, EnvPServerEndpoints, EnvLaunchServers, EnvLaunchTrainers)
		if spec.GlooLevel() > 0 {
			names = append(names, EnvLaunchGlooPort)
		}
		if spec.Heter != nil {
			names = append(names, EnvAllHeterEndpoints, EnvHeterEndpoints20, EnvStageTrainersNum)
			switch rt {
			case paddlev1.ReplicaWorker:
				names = append(names, EnvNextHeter)
			case paddlev1.ReplicaHeter:
				names = append(names, EnvPreviousHeter)
			}
		}
	}
	if spec.GlooLevel() > 0 {
		names = append(names, EnvGlooHTTPEndpoint)
	}
	return names
}

// JobEnv computes the job variables from the topology (every host must be
// known), and the backup file Paddle reads the worker list from.
func JobEnv(spec *paddlev1.PaddleJobSpec, topo Topology) map[string]string {
	workers := len(topo[paddlev1.ReplicaWorker])
	trainerEndpoints := topo.Endpoints(paddlev1.ReplicaWorker)
	env := map[string]string{
		EnvTrainers:    strconv.Itoa(workers),
		EnvTrainersNum: strconv.Itoa(workers),
	}
	if WorkerListsInEnv(spec, trainerEndpoints) {
		env[EnvTrainerEndpoints] = trainerEndpoints
		env[EnvTrainerHosts] = topo.Hosts(paddlev1.ReplicaWorker)
		if spec.PS != nil {
			env[EnvLaunchTrainers] = trainerEndpoints
		}
	}
	backup, _ := json.Marshal(map[string]string{EnvTrainerEndpoints: trainerEndpoints})
	env[BackupEnvKey] = string(backup)

	rdv := topo[rendezvousRole(spec)]
	if !spec.IsElastic() {
		env[EnvNNodes] = strconv.Itoa(spec.TotalReplicas())
		if len(rdv) > 0 {
			env[EnvMaster] = fmt.Sprintf("%s:%d", rdv[0].Host, rdv[0].Ports.MasterPort())
		}
	}
	if spec.GlooLevel() > 0 && len(rdv) > 0 {
		env[EnvGlooHTTPEndpoint] = fmt.Sprintf("%s:%d", rdv[0].Host, rdv[0].Ports.GlooPort())
		if spec.PS != nil {
			env[EnvLaunchGlooPort] = strconv.Itoa(int(rdv[0].Ports.GlooPort()))
		}
	}
	if spec.PS != nil {
		pservers := topo.Endpoints(paddlev1.ReplicaPS)
		env[EnvPServerEndpoints] = pservers
		env[EnvLaunchServers] = pservers
	}
	if spec.Heter != nil {
		heters := topo.Endpoints(paddlev1.ReplicaHeter)
		env[EnvAllHeterEndpoints] = heters
		env[EnvHeterEndpoints20] = heters
		env[EnvNextHeter] = heters
		env[EnvPreviousHeter] = trainerEndpoints
		env[EnvStageTrainersNum] = fmt.Sprintf("[%d, %d]", workers, len(topo[paddlev1.ReplicaHeter]))
	}
	return env
}

// PodEnvOptions are the operator's settings and the pass's state a pod's
// variables depend on.
type PodEnvOptions struct {
	// ElasticEndpoints is the etcd of an elastic job (ElasticEndpoints).
	ElasticEndpoints []string
	// GlooStorePrefix is the Gloo store prefix of the pods of a job on the
	// file-system rendezvous (gloo.go), "" otherwise.
	GlooStorePrefix string
}

// PodEnv is the pod variables of one pod, in the order they are added.
// Variables that follow may refer to earlier ones with $(NAME). Of the pod
// options it reads an elastic job's etcd and the Gloo store prefix.
func PodEnv(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, index int, ports PortRange, opts PodEnvOptions) []corev1.EnvVar {
	spec := &job.Spec
	jobID := job.Namespace + "-" + job.Name
	if spec.IsElastic() {
		jobID = ElasticJobID(job)
	}
	role := trainingRoles[rt]
	env := []corev1.EnvVar{
		{Name: "PADDLE_JOB_ID", Value: jobID},
		{Name: "PADDLE_TRAINING_ROLE", Value: role},
		{Name: "TRAINING_ROLE", Value: role},
	}
	if !spec.IsElastic() {
		// An elastic worker's rank is the one Paddle's launcher gives it
		// among the live workers (elastic.go), not its index.
		id := strconv.Itoa(index)
		env = append(env,
			corev1.EnvVar{Name: "PADDLE_TRAINER_ID", Value: id},
			corev1.EnvVar{Name: "TRAINER_ID", Value: id},
		)
	}
	env = append(env,
		podIPEnv(job, rt, index),
		corev1.EnvVar{Name: "PADDLE_PORT", Value: strconv.Itoa(int(ports.First))},
		corev1.EnvVar{Name: "PADDLE_PORTS_NUM", Value: strconv.Itoa(int(ports.ProcessPorts()))},
		corev1.EnvVar{Name: "TRAINER_PORTS_NUM", Value: strconv.Itoa(int(ports.ProcessPorts()))},
		corev1.EnvVar{Name: EnvBackupPath, Value: EndpointsMountPath + "/" + BackupEnvKey},
	)
	if OnHostNetwork(spec) {
		env = append(env, portRangeEnv(ports))
	}
	gpus := PodGPUs(spec.Replicas(rt))
	if gpus > 0 {
		// paddle.distributed.init_parallel_env on a CUDA build, and heter
		// trainers, need the devices; the device plugin numbers a
		// container's GPUs from 0.
		env = append(env, corev1.EnvVar{Name: "FLAGS_selected_gpus", Value: deviceList(gpus)})
	}
	if spec.PS == nil {
		env = append(env,
			corev1.EnvVar{Name: "PADDLE_CURRENT_ENDPOINT", Value: "$(POD_IP):$(PADDLE_PORT)"},
			corev1.EnvVar{Name: "PADDLE_RANK_IN_NODE", Value: "0"},
		)
		if gpus == 0 {
			// init_parallel_env without a launcher builds its process group
			// on CPU only when told the backend (the launcher sets it too).
			env = append(env, corev1.EnvVar{Name: "PADDLE_DISTRI_BACKEND", Value: "gloo"})
		}
	}
	if spec.Heter != nil {
		if stage := heterStage(rt); stage != "" {
			env = append(env, corev1.EnvVar{Name: "STAGE_ID", Value: stage})
		}
		env = append(env,
			corev1.EnvVar{Name: "STAGE_NUM", Value: "2"},
			corev1.EnvVar{Name: "HETER_DEVICE_TYPE", Value: heterDeviceType(spec.Heter)},
		)
	}
	env = append(env, GlooEnv(job, rt, jobID, opts.GlooStorePrefix)...)
	return append(env, ElasticEnv(job, opts.ElasticEndpoints)...)
}

// portRangeEnv is PORT_RANGE, where Paddle's launcher picks the ports it
// finds free for itself (launch/context/node.py: "first:last", both
// included; 35100:64000 when unset): in Host intranet the pod's process
// ports, so the ports the launcher takes are ones the operator reserved for
// this pod on the node, not another pod's. Only there: elsewhere every pod
// has a network namespace of its own, where the launcher's default range is
// free.
func portRangeEnv(ports PortRange) corev1.EnvVar {
	return corev1.EnvVar{Name: "PORT_RANGE", Value: fmt.Sprintf("%d:%d", ports.First, ports.First+ports.ProcessPorts()-1)}
}

func heterStage(rt paddlev1.ReplicaType) string {
	switch rt {
	case paddlev1.ReplicaWorker:
		return "1"
	case paddlev1.ReplicaHeter:
		return "2"
	}
	return ""
}

func heterDeviceType(heter *paddlev1.ReplicaSpec) string {
	if PodGPUs(heter) > 0 {
		return "gpu"
	}
	return "cpu"
}

// deviceList is "0,1,...,n-1".
func deviceList(n int64) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return strings.Join(ids, ",")
}

// etcdPlaceholder stands for an elastic job's etcd in FirstPodEnv: the names
// of the variables it gives are what matter there, not their values.
const etcdPlaceholder = "http://etcd:2379"

// FirstPodEnv is the environment of a role's first pod, for the checks of a
// job (internal/operator/validation) to compare its templates against: its
// pod variables (with an etcd, so that an elastic job's are all there), then
// the job variables it reads from the endpoints ConfigMap, named, without a
// value.
func FirstPodEnv(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) []corev1.EnvVar {
	job := &paddlev1.PaddleJob{Spec: *spec}
	ports := PortRange{First: DefaultBasePort, Count: PortsPerPod(spec.Replicas(rt))}
	env := PodEnv(job, rt, 0, ports, PodEnvOptions{ElasticEndpoints: []string{etcdPlaceholder}})
	for _, n := range JobEnvNames(spec, rt) {
		env = append(env, corev1.EnvVar{Name: n})
	}
	return env
}
