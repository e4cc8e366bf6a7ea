package controller

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// renderEnv runs the pure pipeline a reconcile runs for a job — pods from the
// spec, addresses (ips by pod name, or host ranges), published job variables —
// and resolves the first container's environment of every pod as a kubelet
// would.
func renderEnv(t *testing.T, job *paddlev1.PaddleJob, ips map[string]string, hostRanges map[string]podcontract.PortRange) map[string]map[string]string {
	envs, _ := renderEnvAndFiles(t, job, ips, hostRanges)
	return envs
}

// renderEnvAndFiles also returns the files of the endpoints volume (the
// published ConfigMap's data).
func renderEnvAndFiles(t *testing.T, job *paddlev1.PaddleJob, ips map[string]string, hostRanges map[string]podcontract.PortRange) (map[string]map[string]string, map[string]string) {
	t.Helper()
	job.Namespace = "ns"
	// The host ports are recorded in the status before any pod or list, as
	// the reconciler's write-ahead step does.
	for name, ports := range hostRanges {
		job.Status.HostPorts = append(job.Status.HostPorts, paddlev1.HostPortRange{Pod: name, Ports: ports.String()})
	}
	jobValues := plannedJobValues(job)
	var pods []*corev1.Pod
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			name := paddlev1.PodName(job.Name, rt, i)
			ports, ok := hostRanges[name]
			if !ok {
				ports = podcontract.DefaultPortRange(job.Spec.Replicas(rt))
			}
			pod := newPod(job, rt, i, ports, podOptionsFor(job, DefaultOptions()))
			pod.Status.PodIP = ips[name]
			pods = append(pods, pod)
		}
	}
	if jobValues == nil {
		topo := observedTopology(job, pods)
		if missing := topo.MissingHosts(job.Name); len(missing) > 0 {
			t.Fatalf("test set-up: no IP for %v", missing)
		}
		jobValues = podcontract.JobEnv(&job.Spec, topo)
	}
	configMaps := map[string]map[string]string{podcontract.EndpointsConfigMapName(job.Name): podcontract.EndpointsData(jobValues)}
	out := map[string]map[string]string{}
	for _, pod := range pods {
		env, err := testutil.ResolveEnv(pod, &pod.Spec.Containers[0], configMaps)
		if err != nil {
			t.Fatalf("resolving env of %s: %v", pod.Name, err)
		}
		out[pod.Name] = env
	}
	return out, configMaps[podcontract.EndpointsConfigMapName(job.Name)]
}

// paddleGetenv reads a variable as Paddle's getenv_or_backup does: from the
// environment, else from the JSON file PADDLE_BACKUP_ENV_PATH names (here:
// a file of the endpoints volume).
func paddleGetenv(t *testing.T, env, files map[string]string, name string) string {
	t.Helper()
	if v, ok := env[name]; ok {
		return v
	}
	path := env["PADDLE_BACKUP_ENV_PATH"]
	if !strings.HasPrefix(path, podcontract.EndpointsMountPath+"/") {
		t.Fatalf("PADDLE_BACKUP_ENV_PATH=%q is not in the endpoints volume", path)
	}
	var backup map[string]string
	if err := json.Unmarshal([]byte(files[strings.TrimPrefix(path, podcontract.EndpointsMountPath+"/")]), &backup); err != nil {
		t.Fatalf("backup env file %s: %v", path, err)
	}
	return backup[name]
}

func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "<unset>" {
			delete(out, kv[i])
			continue
		}
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestEnvironmentContract pins the whole environment one pod of each kind
// of job gets, as a kubelet resolves it.
func TestEnvironmentContract(t *testing.T) {
	for _, tc := range append(parameterServerContractCases(), collectiveContractCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			got := renderEnv(t, tc.job, tc.ips, tc.hostRanges)[tc.pod]
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env of %s (-want +got):\n%s", tc.pod, diff)
			}
		})
	}
}

// envContractCase is one pod's whole expected environment.
type envContractCase struct {
	name       string
	job        *paddlev1.PaddleJob
	ips        map[string]string
	hostRanges map[string]podcontract.PortRange
	pod        string
	want       map[string]string
}

// parameterServerContractCases are the environments of parameter-server
// jobs: PodIP and Service intranet, Gloo levels, heter trainers, Host
// intranet. The jobs are built afresh for each run: rendering writes to
// them.
func parameterServerContractCases() []envContractCase {
	return []envContractCase{{
		name: "PS, PodIP, Gloo on workers: a worker",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(1).Obj(),
		ips:  contractPSIPs, pod: "wd-worker-1",
		want: contractPSPodIP,
	}, {
		// The store container serves the HTTP store: the servers are off
		// it (level 0), with the same lists and store address.
		name: "PS, PodIP, Gloo on workers: a pserver gets the same lists, at level 0",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(1).Obj(),
		ips:  contractPSIPs, pod: "wd-ps-0",
		want: with(contractPSPodIP, "PADDLE_WITH_GLOO", "0", "PADDLE_TRAINING_ROLE", "PSERVER", "TRAINING_ROLE", "PSERVER",
			"PADDLE_TRAINER_ID", "0", "TRAINER_ID", "0", "POD_IP", "10.0.0.10"),
	}, {
		// Over HTTP Paddle builds the workers' group only, at 2 as at 1.
		name: "PS, PodIP, Gloo level 2 over HTTP: workers at 2, servers at 0",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(2).Obj(),
		ips:  contractPSIPs, pod: "wd-ps-1",
		want: with(contractPSPodIP, "PADDLE_WITH_GLOO", "0", "PADDLE_TRAINING_ROLE", "PSERVER", "TRAINING_ROLE", "PSERVER",
			"PADDLE_TRAINER_ID", "1", "TRAINER_ID", "1", "POD_IP", "10.0.0.11"),
	}, {
		name: "PS, PodIP, Gloo level 2 over HTTP: a worker at 2",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(2).Obj(),
		ips:  contractPSIPs, pod: "wd-worker-1",
		want: with(contractPSPodIP, "PADDLE_WITH_GLOO", "2"),
	}, {
		name: "PS, Service intranet: DNS names, published before the pods",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).Intranet(paddlev1.IntranetService).Obj(),
		pod:  "wd-ps-1",
		want: contractPSService,
	}, {
		name: "Heter PS: a worker (stage 1) sees the heter trainers next",
		job:  testutil.MakePaddleJob("ht", "").PS(1).Workers(2).Heter(1).GPUs(paddlev1.ReplicaHeter, 1).Obj(),
		ips:  contractHeterIPs, pod: "ht-worker-0",
		want: contractHeterWorker,
	}, {
		name: "Heter PS: a heter trainer (stage 2) sees the workers before it",
		job:  testutil.MakePaddleJob("ht", "").PS(1).Workers(2).Heter(1).GPUs(paddlev1.ReplicaHeter, 1).Obj(),
		ips:  contractHeterIPs, pod: "ht-heter-0",
		want: with(contractHeterWorker, "PADDLE_TRAINING_ROLE", "HETER_TRAINER", "TRAINING_ROLE", "HETER_TRAINER",
			"POD_IP", "10.2.0.30", "STAGE_ID", "2", "FLAGS_selected_gpus", "0",
			"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST", "<unset>",
			"PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST", "10.2.0.20:23000,10.2.0.21:23000"),
	}, {
		name: "Heter PS: a pserver has no stage id",
		job:  testutil.MakePaddleJob("ht", "").PS(1).Workers(2).Heter(1).Obj(),
		ips:  contractHeterIPs, pod: "ht-ps-0",
		want: with(contractHeterWorker, "PADDLE_TRAINING_ROLE", "PSERVER", "TRAINING_ROLE", "PSERVER",
			"POD_IP", "10.2.0.10", "STAGE_ID", "<unset>", "HETER_DEVICE_TYPE", "cpu",
			"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST", "<unset>"),
	}, {
		name: "Host intranet, parameter server: its name and its own allocated range",
		job:  testutil.MakePaddleJob("hn", "").PS(1).Workers(1).Intranet(paddlev1.IntranetHost).Obj(),
		ips:  contractHostIPs, hostRanges: contractHostRanges, pod: "hn-ps-0",
		want: contractHostPS,
	}, {
		name: "A variable the template sets itself is kept",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(1).Env(paddlev1.ReplicaWorker, "TRAINERS", "7").Obj(),
		ips:  contractPSIPs, pod: "wd-worker-1",
		want: with(contractPSPodIP, "TRAINERS", "7"),
	}}
}

// collectiveContractCases are the environments of collective jobs.
func collectiveContractCases() []envContractCase {
	return []envContractCase{{
		name: "Collective, PodIP",
		job:  testutil.MakePaddleJob("resnet", "").Workers(3).Obj(),
		ips:  contractCollectiveIPs, pod: "resnet-worker-2",
		want: contractCollective,
	}, {
		name: "Collective with Gloo: the store is on worker-0",
		job:  testutil.MakePaddleJob("resnet", "").Workers(3).WithGloo(2).Obj(),
		ips:  contractCollectiveIPs, pod: "resnet-worker-2",
		want: with(contractCollective, "PADDLE_WITH_GLOO", "2", "PADDLE_GLOO_RENDEZVOUS", "3", "SYS_JOB_ID", "ns-resnet",
			"PADDLE_GLOO_HTTP_ENDPOINT", "10.1.0.1:23001"),
	}, {
		name: "Collective, four GPUs a pod: four process ports, rendezvous after them",
		job:  testutil.MakePaddleJob("resnet", "").Workers(3).GPUs(paddlev1.ReplicaWorker, 4).Obj(),
		ips:  contractCollectiveIPs, pod: "resnet-worker-2",
		want: with(contractCollective, "PADDLE_PORTS_NUM", "4", "TRAINER_PORTS_NUM", "4", "PADDLE_MASTER", "10.1.0.1:23005",
			"PADDLE_DISTRI_BACKEND", "<unset>", "FLAGS_selected_gpus", "0,1,2,3"),
	}, {
		name: "Single worker, Service intranet",
		job:  testutil.MakePaddleJob("one", "").Workers(1).Intranet(paddlev1.IntranetService).Obj(),
		pod:  "one-worker-0",
		want: map[string]string{
			"PADDLE_JOB_ID":        "ns-one",
			"PADDLE_TRAINING_ROLE": "TRAINER", "TRAINING_ROLE": "TRAINER",
			"PADDLE_TRAINER_ID": "0", "TRAINER_ID": "0",
			"POD_IP": "one-worker-0.one", "PADDLE_PORT": "23000", "PADDLE_PORTS_NUM": "1", "TRAINER_PORTS_NUM": "1",
			"PADDLE_CURRENT_ENDPOINT": "one-worker-0.one:23000", "PADDLE_RANK_IN_NODE": "0",
			"PADDLE_NNODES": "1", "TRAINERS": "1", "PADDLE_MASTER": "one-worker-0.one:23002",
			"PADDLE_TRAINER_ENDPOINTS": "one-worker-0.one:23000", "PADDLE_TRAINERS": "one-worker-0.one",
			"PADDLE_TRAINERS_NUM": "1", "PADDLE_DISTRI_BACKEND": "gloo",
			"PADDLE_BACKUP_ENV_PATH": "/etc/paddlejob/backup_env.json",
			"PADDLE_WITH_GLOO":       "0",
		},
	}}
}

// The expected environments the cases start from (with changes a case
// with(...) makes to a copy), and the pods' addresses.
var (
	contractPSPodIP = map[string]string{
		"FLAGS_enable_pir_api": "0", // tuning.go: parameter-server pods
		"PADDLE_JOB_ID":        "ns-wd", "SYS_JOB_ID": "ns-wd",
		"PADDLE_TRAINING_ROLE": "TRAINER", "TRAINING_ROLE": "TRAINER",
		"PADDLE_TRAINER_ID": "1", "TRAINER_ID": "1",
		"POD_IP": "10.0.0.21", "PADDLE_PORT": "23000", "PADDLE_PORTS_NUM": "1", "TRAINER_PORTS_NUM": "1",
		"PADDLE_NNODES": "4", "TRAINERS": "2",
		"PADDLE_MASTER":                "10.0.0.10:23002",
		"PADDLE_PSERVERS_IP_PORT_LIST": "10.0.0.10:23000,10.0.0.11:23000",
		"PADDLE_TRAINER_ENDPOINTS":     "10.0.0.20:23000,10.0.0.21:23000",
		"PADDLE_TRAINERS":              "10.0.0.20,10.0.0.21",
		"PADDLE_TRAINERS_NUM":          "2",
		"PADDLE_SERVERS_ENDPOINTS":     "10.0.0.10:23000,10.0.0.11:23000",
		"PADDLE_TRAINERS_ENDPOINTS":    "10.0.0.20:23000,10.0.0.21:23000",
		"PADDLE_WITH_GLOO":             "1", "PADDLE_GLOO_RENDEZVOUS": "3",
		"PADDLE_GLOO_HTTP_ENDPOINT": "10.0.0.10:23001", "PADDLE_GLOO_PORT": "23001",
		"PADDLE_BACKUP_ENV_PATH": "/etc/paddlejob/backup_env.json",
	}
	contractPSIPs = map[string]string{"wd-ps-0": "10.0.0.10", "wd-ps-1": "10.0.0.11", "wd-worker-0": "10.0.0.20", "wd-worker-1": "10.0.0.21"}

	contractPSService = map[string]string{
		"PADDLE_WITH_GLOO":     "0", // set at 0 too: the launcher defaults it to 1
		"FLAGS_enable_pir_api": "0", // tuning.go: parameter-server pods
		"PADDLE_JOB_ID":        "ns-wd",
		"PADDLE_TRAINING_ROLE": "PSERVER", "TRAINING_ROLE": "PSERVER",
		"PADDLE_TRAINER_ID": "1", "TRAINER_ID": "1",
		"POD_IP": "wd-ps-1.wd", "PADDLE_PORT": "23000", "PADDLE_PORTS_NUM": "1", "TRAINER_PORTS_NUM": "1",
		"PADDLE_NNODES": "4", "TRAINERS": "2",
		"PADDLE_MASTER":                "wd-ps-0.wd:23002",
		"PADDLE_PSERVERS_IP_PORT_LIST": "wd-ps-0.wd:23000,wd-ps-1.wd:23000",
		"PADDLE_TRAINER_ENDPOINTS":     "wd-worker-0.wd:23000,wd-worker-1.wd:23000",
		"PADDLE_TRAINERS":              "wd-worker-0.wd,wd-worker-1.wd",
		"PADDLE_TRAINERS_NUM":          "2",
		"PADDLE_SERVERS_ENDPOINTS":     "wd-ps-0.wd:23000,wd-ps-1.wd:23000",
		"PADDLE_TRAINERS_ENDPOINTS":    "wd-worker-0.wd:23000,wd-worker-1.wd:23000",
		"PADDLE_BACKUP_ENV_PATH":       "/etc/paddlejob/backup_env.json",
	}

	contractCollective = map[string]string{
		"PADDLE_WITH_GLOO":     "0", // set at 0 too: the launcher defaults it to 1
		"PADDLE_JOB_ID":        "ns-resnet",
		"PADDLE_TRAINING_ROLE": "TRAINER", "TRAINING_ROLE": "TRAINER",
		"PADDLE_TRAINER_ID": "2", "TRAINER_ID": "2",
		"POD_IP": "10.1.0.3", "PADDLE_PORT": "23000", "PADDLE_PORTS_NUM": "1", "TRAINER_PORTS_NUM": "1",
		"PADDLE_CURRENT_ENDPOINT": "10.1.0.3:23000", "PADDLE_RANK_IN_NODE": "0",
		"PADDLE_NNODES": "3", "TRAINERS": "3",
		"PADDLE_MASTER":            "10.1.0.1:23002",
		"PADDLE_TRAINER_ENDPOINTS": "10.1.0.1:23000,10.1.0.2:23000,10.1.0.3:23000",
		"PADDLE_TRAINERS":          "10.1.0.1,10.1.0.2,10.1.0.3",
		"PADDLE_TRAINERS_NUM":      "3",
		"PADDLE_DISTRI_BACKEND":    "gloo",
		"PADDLE_BACKUP_ENV_PATH":   "/etc/paddlejob/backup_env.json",
	}
	contractCollectiveIPs = map[string]string{"resnet-worker-0": "10.1.0.1", "resnet-worker-1": "10.1.0.2", "resnet-worker-2": "10.1.0.3"}

	contractHeterWorker = map[string]string{
		"PADDLE_WITH_GLOO":     "0", // set at 0 too: the launcher defaults it to 1
		"FLAGS_enable_pir_api": "0", // tuning.go: parameter-server pods
		"PADDLE_JOB_ID":        "ns-ht",
		"PADDLE_TRAINING_ROLE": "TRAINER", "TRAINING_ROLE": "TRAINER",
		"PADDLE_TRAINER_ID": "0", "TRAINER_ID": "0",
		"POD_IP": "10.2.0.20", "PADDLE_PORT": "23000", "PADDLE_PORTS_NUM": "1", "TRAINER_PORTS_NUM": "1",
		"PADDLE_NNODES": "4", "TRAINERS": "2",
		"PADDLE_MASTER":                          "10.2.0.10:23002",
		"PADDLE_PSERVERS_IP_PORT_LIST":           "10.2.0.10:23000",
		"PADDLE_TRAINER_ENDPOINTS":               "10.2.0.20:23000,10.2.0.21:23000",
		"PADDLE_TRAINERS":                        "10.2.0.20,10.2.0.21",
		"PADDLE_TRAINERS_NUM":                    "2",
		"PADDLE_SERVERS_ENDPOINTS":               "10.2.0.10:23000",
		"PADDLE_TRAINERS_ENDPOINTS":              "10.2.0.20:23000,10.2.0.21:23000",
		"PADDLE_BACKUP_ENV_PATH":                 "/etc/paddlejob/backup_env.json",
		"PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST":  "10.2.0.30:23000",
		"PADDLE_HETER_TRAINER_IP_PORT_LIST":      "10.2.0.30:23000",
		"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST": "10.2.0.30:23000",
		"PADDLE_STAGE_TRAINERS_NUM":              "[2, 1]",
		"STAGE_ID":                               "1", "STAGE_NUM": "2", "HETER_DEVICE_TYPE": "gpu",
	}
	contractHeterIPs = map[string]string{"ht-ps-0": "10.2.0.10", "ht-worker-0": "10.2.0.20", "ht-worker-1": "10.2.0.21", "ht-heter-0": "10.2.0.30"}

	contractHostIPs    = map[string]string{"hn-ps-0": "192.168.0.5", "hn-worker-0": "192.168.0.5"}
	contractHostRanges = map[string]podcontract.PortRange{"hn-ps-0": {First: 24000, Count: 3}, "hn-worker-0": {First: 24003, Count: 3}}
	contractHostPS     = map[string]string{
		"PADDLE_WITH_GLOO":     "0", // set at 0 too: the launcher defaults it to 1
		"FLAGS_enable_pir_api": "0", // tuning.go: parameter-server pods
		"PADDLE_JOB_ID":        "ns-hn",
		"PADDLE_TRAINING_ROLE": "PSERVER", "TRAINING_ROLE": "PSERVER",
		"PADDLE_TRAINER_ID": "0", "TRAINER_ID": "0",
		// Addressed by name on the node's address: the launcher, matching
		// endpoints by its POD_IP, starts only this pod's process.
		"POD_IP": "hn-ps-0.hn", "PADDLE_PORT": "24000", "PADDLE_PORTS_NUM": "1", "TRAINER_PORTS_NUM": "1",
		"PORT_RANGE":    "24000:24000", // the launcher's own port picks: this pod's process port
		"PADDLE_NNODES": "2", "TRAINERS": "1",
		"PADDLE_MASTER":                "hn-ps-0.hn:24002",
		"PADDLE_PSERVERS_IP_PORT_LIST": "hn-ps-0.hn:24000",
		"PADDLE_TRAINERS_NUM":          "1",
		"PADDLE_SERVERS_ENDPOINTS":     "hn-ps-0.hn:24000",
		// Paddle's PS launcher needs the worker lists in its environment,
		// Host intranet included.
		"PADDLE_TRAINERS_ENDPOINTS": "hn-worker-0.hn:24003", "PADDLE_TRAINER_ENDPOINTS": "hn-worker-0.hn:24003", "PADDLE_TRAINERS": "hn-worker-0.hn",
		"PADDLE_BACKUP_ENV_PATH": "/etc/paddlejob/backup_env.json",
	}
)
