package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// renderEnv runs the pure pipeline a reconcile runs for a job — pods from the
// spec, addresses (ips by pod name, or host ranges), published job variables —
// and resolves the first container's environment of every pod as a kubelet
// would.
func renderEnv(t *testing.T, job *paddlev1.PaddleJob, ips map[string]string, hostRanges map[string]portRange) map[string]map[string]string {
	envs, _ := renderEnvAndFiles(t, job, ips, hostRanges)
	return envs
}

// renderEnvAndFiles also returns the files of the endpoints volume (the
// published ConfigMap's data).
func renderEnvAndFiles(t *testing.T, job *paddlev1.PaddleJob, ips map[string]string, hostRanges map[string]portRange) (map[string]map[string]string, map[string]string) {
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
				ports = defaultPortRange(job.Spec.Replicas(rt))
			}
			pod := newPod(job, rt, i, ports, podOptionsFor(job, DefaultOptions()))
			pod.Status.PodIP = ips[name]
			pods = append(pods, pod)
		}
	}
	if jobValues == nil {
		topo := observedTopology(job, pods)
		if missing := topo.missingHosts(job.Name); len(missing) > 0 {
			t.Fatalf("test set-up: no IP for %v", missing)
		}
		jobValues = jobEnv(&job.Spec, topo)
	}
	configMaps := map[string]map[string]string{endpointsConfigMapName(job.Name): endpointsData(jobValues)}
	out := map[string]map[string]string{}
	for _, pod := range pods {
		env, err := testutil.ResolveEnv(pod, &pod.Spec.Containers[0], configMaps)
		if err != nil {
			t.Fatalf("resolving env of %s: %v", pod.Name, err)
		}
		out[pod.Name] = env
	}
	return out, configMaps[endpointsConfigMapName(job.Name)]
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
	if !strings.HasPrefix(path, endpointsMountPath+"/") {
		t.Fatalf("PADDLE_BACKUP_ENV_PATH=%q is not in the endpoints volume", path)
	}
	var backup map[string]string
	if err := json.Unmarshal([]byte(files[strings.TrimPrefix(path, endpointsMountPath+"/")]), &backup); err != nil {
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

func TestEnvironmentContract(t *testing.T) {
	psPodIP := map[string]string{
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
	psIPs := map[string]string{"wd-ps-0": "10.0.0.10", "wd-ps-1": "10.0.0.11", "wd-worker-0": "10.0.0.20", "wd-worker-1": "10.0.0.21"}

	psService := map[string]string{
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

	collective := map[string]string{
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
	collectiveIPs := map[string]string{"resnet-worker-0": "10.1.0.1", "resnet-worker-1": "10.1.0.2", "resnet-worker-2": "10.1.0.3"}

	heterWorker := map[string]string{
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
	heterIPs := map[string]string{"ht-ps-0": "10.2.0.10", "ht-worker-0": "10.2.0.20", "ht-worker-1": "10.2.0.21", "ht-heter-0": "10.2.0.30"}

	hostIPs := map[string]string{"hn-ps-0": "192.168.0.5", "hn-worker-0": "192.168.0.5"}
	hostRanges := map[string]portRange{"hn-ps-0": {First: 24000, Count: 3}, "hn-worker-0": {First: 24003, Count: 3}}
	hostPS := map[string]string{
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

	tests := []struct {
		name       string
		job        *paddlev1.PaddleJob
		ips        map[string]string
		hostRanges map[string]portRange
		pod        string
		want       map[string]string
	}{{
		name: "PS, PodIP, Gloo on workers: a worker",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(1).Obj(),
		ips:  psIPs, pod: "wd-worker-1",
		want: psPodIP,
	}, {
		name: "PS, PodIP, Gloo on workers: a pserver gets the same lists",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(1).Obj(),
		ips:  psIPs, pod: "wd-ps-0",
		want: with(psPodIP, "PADDLE_TRAINING_ROLE", "PSERVER", "TRAINING_ROLE", "PSERVER",
			"PADDLE_TRAINER_ID", "0", "TRAINER_ID", "0", "POD_IP", "10.0.0.10"),
	}, {
		// Paddle's role maker on ps-0 serves the store at every level above
		// 0; over HTTP it builds the workers' group only, at 2 as at 1.
		name: "PS, PodIP, Gloo on workers and servers: every pod gets level 2",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(2).Obj(),
		ips:  psIPs, pod: "wd-ps-1",
		want: with(psPodIP, "PADDLE_WITH_GLOO", "2", "PADDLE_TRAINING_ROLE", "PSERVER", "TRAINING_ROLE", "PSERVER",
			"PADDLE_TRAINER_ID", "1", "TRAINER_ID", "1", "POD_IP", "10.0.0.11"),
	}, {
		name: "PS, Service intranet: DNS names, published before the pods",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).Intranet(paddlev1.IntranetService).Obj(),
		pod:  "wd-ps-1",
		want: psService,
	}, {
		name: "Collective, PodIP",
		job:  testutil.MakePaddleJob("resnet", "").Workers(3).Obj(),
		ips:  collectiveIPs, pod: "resnet-worker-2",
		want: collective,
	}, {
		name: "Collective with Gloo: the store is on worker-0",
		job:  testutil.MakePaddleJob("resnet", "").Workers(3).WithGloo(2).Obj(),
		ips:  collectiveIPs, pod: "resnet-worker-2",
		want: with(collective, "PADDLE_WITH_GLOO", "2", "PADDLE_GLOO_RENDEZVOUS", "3", "SYS_JOB_ID", "ns-resnet",
			"PADDLE_GLOO_HTTP_ENDPOINT", "10.1.0.1:23001"),
	}, {
		name: "Collective, four GPUs a pod: four process ports, rendezvous after them",
		job:  testutil.MakePaddleJob("resnet", "").Workers(3).GPUs(paddlev1.ReplicaWorker, 4).Obj(),
		ips:  collectiveIPs, pod: "resnet-worker-2",
		want: with(collective, "PADDLE_PORTS_NUM", "4", "TRAINER_PORTS_NUM", "4", "PADDLE_MASTER", "10.1.0.1:23005",
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
	}, {
		name: "Heter PS: a worker (stage 1) sees the heter trainers next",
		job:  testutil.MakePaddleJob("ht", "").PS(1).Workers(2).Heter(1).GPUs(paddlev1.ReplicaHeter, 1).Obj(),
		ips:  heterIPs, pod: "ht-worker-0",
		want: heterWorker,
	}, {
		name: "Heter PS: a heter trainer (stage 2) sees the workers before it",
		job:  testutil.MakePaddleJob("ht", "").PS(1).Workers(2).Heter(1).GPUs(paddlev1.ReplicaHeter, 1).Obj(),
		ips:  heterIPs, pod: "ht-heter-0",
		want: with(heterWorker, "PADDLE_TRAINING_ROLE", "HETER_TRAINER", "TRAINING_ROLE", "HETER_TRAINER",
			"POD_IP", "10.2.0.30", "STAGE_ID", "2", "FLAGS_selected_gpus", "0",
			"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST", "<unset>",
			"PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST", "10.2.0.20:23000,10.2.0.21:23000"),
	}, {
		name: "Heter PS: a pserver has no stage id",
		job:  testutil.MakePaddleJob("ht", "").PS(1).Workers(2).Heter(1).Obj(),
		ips:  heterIPs, pod: "ht-ps-0",
		want: with(heterWorker, "PADDLE_TRAINING_ROLE", "PSERVER", "TRAINING_ROLE", "PSERVER",
			"POD_IP", "10.2.0.10", "STAGE_ID", "<unset>", "HETER_DEVICE_TYPE", "cpu",
			"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST", "<unset>"),
	}, {
		name: "Host intranet, parameter server: its name and its own allocated range",
		job:  testutil.MakePaddleJob("hn", "").PS(1).Workers(1).Intranet(paddlev1.IntranetHost).Obj(),
		ips:  hostIPs, hostRanges: hostRanges, pod: "hn-ps-0",
		want: hostPS,
	}, {
		name: "A variable the template sets itself is kept",
		job:  testutil.MakePaddleJob("wd", "").PS(2).Workers(2).WithGloo(1).Env(paddlev1.ReplicaWorker, "TRAINERS", "7").Obj(),
		ips:  psIPs, pod: "wd-worker-1",
		want: with(psPodIP, "TRAINERS", "7"),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := renderEnv(t, tc.job, tc.ips, tc.hostRanges)[tc.pod]
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env of %s (-want +got):\n%s", tc.pod, diff)
			}
		})
	}
}

// Paddle finds a pserver's rank with list.index(POD_IP:PADDLE_PORT): every pod
// must find itself, character for character, in its role's list.
func TestEveryPodFindsItselfInItsList(t *testing.T) {
	lists := map[paddlev1.ReplicaType]string{
		paddlev1.ReplicaPS:     "PADDLE_PSERVERS_IP_PORT_LIST",
		paddlev1.ReplicaWorker: "PADDLE_TRAINER_ENDPOINTS",
		paddlev1.ReplicaHeter:  "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST",
	}
	for _, intranet := range []paddlev1.Intranet{paddlev1.IntranetPodIP, paddlev1.IntranetService, paddlev1.IntranetHost} {
		t.Run(string(intranet), func(t *testing.T) {
			job := testutil.MakePaddleJob("j", "").PS(3).Workers(4).Heter(2).Intranet(intranet).Obj()
			ips := map[string]string{}
			ranges := map[string]portRange{}
			n := 0
			for _, rt := range paddlev1.ReplicaTypes {
				for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
					name := paddlev1.PodName("j", rt, i)
					ips[name] = fmt.Sprintf("10.0.0.%d", n+1)
					if intranet == paddlev1.IntranetHost {
						ips[name] = "192.168.1.1"
						ranges[name] = portRange{First: int32(24000 + 3*n), Count: 3}
					}
					n++
				}
			}
			envs, files := renderEnvAndFiles(t, job, ips, ranges)
			for _, rt := range paddlev1.ReplicaTypes {
				for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
					env := envs[paddlev1.PodName("j", rt, i)]
					self := env["POD_IP"] + ":" + env["PADDLE_PORT"]
					list := paddleGetenv(t, env, files, lists[rt])
					if got := indexOf(splitList(list), self); got != i {
						t.Errorf("%s-%d: %s is at position %d of %s=%q, want %d", rt, i, self, got, lists[rt], list, i)
					}
				}
			}
		})
	}
}

func splitList(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// Where Paddle's launcher would misread the worker list in its environment
// — pods sharing the node's address, elastic jobs — the list is only in the
// backup file, and the launcher uses PADDLE_MASTER and PADDLE_NNODES.
func TestWorkerListsLeftToTheBackupFile(t *testing.T) {
	hostJob := testutil.MakePaddleJob("hc", "").Workers(2).Intranet(paddlev1.IntranetHost).Obj()
	hostIPs := map[string]string{"hc-worker-0": "192.168.0.5", "hc-worker-1": "192.168.0.5"}
	hostRanges := map[string]portRange{"hc-worker-0": {First: 24000, Count: 3}, "hc-worker-1": {First: 24003, Count: 3}}

	elasticJob := testutil.MakePaddleJob("el", "").UID("6f1d2c3a-9b8e-4f7a-8c1d-2e3f4a5b6c7d").Workers(3).Elastic(2, 4, "http://etcd.paddle:2379", "http://etcd2:2379").Obj()
	elasticIPs := map[string]string{"el-worker-0": "10.3.0.1", "el-worker-1": "10.3.0.2", "el-worker-2": "10.3.0.3"}

	// 8000 workers: a list over the kernel's limit for one environment
	// string.
	manyIPs := func(job string, n int) map[string]string {
		ips := map[string]string{}
		for i := 0; i < n; i++ {
			ips[paddlev1.PodName(job, paddlev1.ReplicaWorker, i)] = fmt.Sprintf("10.4.%d.%d", i/250, i%250+1)
		}
		return ips
	}
	hugeJob := testutil.MakePaddleJob("huge", "").Workers(8000).Obj()

	tests := []struct {
		name       string
		job        *paddlev1.PaddleJob
		ips        map[string]string
		hostRanges map[string]portRange
		pod        string
		// want are variables that must have these values ("<unset>": absent).
		want map[string]string
		// wantBackup is PADDLE_TRAINER_ENDPOINTS as Paddle reads it.
		wantBackup string
	}{{
		name: "Host intranet: two workers on one node",
		job:  hostJob, ips: hostIPs, hostRanges: hostRanges, pod: "hc-worker-1",
		want: map[string]string{
			"PADDLE_TRAINER_ENDPOINTS": "<unset>", "PADDLE_TRAINERS": "<unset>",
			"PADDLE_MASTER": "192.168.0.5:24002", "PADDLE_NNODES": "2",
			"PADDLE_CURRENT_ENDPOINT": "192.168.0.5:24003", "PADDLE_TRAINER_ID": "1",
			"PORT_RANGE": "24003:24003",
		},
		wantBackup: "192.168.0.5:24000,192.168.0.5:24003",
	}, {
		name: "Elastic: etcd master, node bounds, the first etcd only, no fixed rank",
		job:  elasticJob, ips: elasticIPs, pod: "el-worker-2",
		want: map[string]string{
			"PADDLE_TRAINER_ENDPOINTS": "<unset>",
			"PADDLE_MASTER":            "etcd://Etcd.paddle:2379", "PADDLE_NNODES": "2:4",
			"PADDLE_ELASTIC_SERVER": "etcd.paddle:2379", "PADDLE_ELASTIC_NP": "2:4",
			"PADDLE_ELASTIC_JOB_ID":  "ns_el_6f1d2c3a-9b8e-4f7a-8c1d-2e3f4a5b6c7d",
			"PADDLE_JOB_ID":          "ns_el_6f1d2c3a-9b8e-4f7a-8c1d-2e3f4a5b6c7d",
			"PADDLE_ELASTIC_TIMEOUT": "30", "PADDLE_ELASTIC_LEVEL": "1", "PADDLE_MAX_RESTART": "32",
			"PADDLE_TRAINER_ID": "<unset>", "TRAINER_ID": "<unset>",
			"PORT_RANGE": "<unset>",
		},
		wantBackup: "10.3.0.1:23000,10.3.0.2:23000,10.3.0.3:23000",
	}, {
		name: "A collective list over the kernel's limit for one environment string",
		job:  hugeJob, ips: manyIPs("huge", 8000), pod: "huge-worker-7",
		want: map[string]string{"PADDLE_TRAINER_ENDPOINTS": "<unset>", "PADDLE_TRAINERS": "<unset>", "PADDLE_TRAINERS_NUM": "8000", "PADDLE_MASTER": "10.4.0.1:23002"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			envs, files := renderEnvAndFiles(t, tc.job, tc.ips, tc.hostRanges)
			env := envs[tc.pod]
			for k, v := range tc.want {
				got, ok := env[k]
				if v == "<unset>" {
					if ok {
						t.Errorf("%s=%q is set, want it unset", k, got)
					}
					continue
				}
				if got != v {
					t.Errorf("%s=%q, want %q", k, got, v)
				}
			}
			backup := paddleGetenv(t, env, files, "PADDLE_TRAINER_ENDPOINTS")
			if tc.wantBackup != "" && backup != tc.wantBackup {
				t.Errorf("PADDLE_TRAINER_ENDPOINTS from the backup file = %q, want %q", backup, tc.wantBackup)
			}
			if n := len(splitList(backup)); n != tc.job.Spec.ReplicaCount(paddlev1.ReplicaWorker) {
				t.Errorf("the backup file lists %d workers, want %d", n, tc.job.Spec.ReplicaCount(paddlev1.ReplicaWorker))
			}
		})
	}
}

// Lists longer than Paddle's launcher's own 48,000 characters stay in the
// environment up to the kernel's limit for one environment string: the
// launcher moves them to a backup file of its own for its children.
func TestWorkerListsInTheEnvironmentUpToTheKernelLimit(t *testing.T) {
	ips := func(job string, ps, workers int) map[string]string {
		out := map[string]string{}
		for i := 0; i < ps; i++ {
			out[paddlev1.PodName(job, paddlev1.ReplicaPS, i)] = fmt.Sprintf("10.5.0.%d", i+1)
		}
		for i := 0; i < workers; i++ {
			out[paddlev1.PodName(job, paddlev1.ReplicaWorker, i)] = fmt.Sprintf("10.4.%d.%d", i/250, i%250+1)
		}
		return out
	}
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		ps   int
		pod  string
		want []string // variables that must be set, with the full list
	}{{
		name: "collective, 3000 workers",
		job:  testutil.MakePaddleJob("big", "").Workers(3000).Obj(),
		pod:  "big-worker-2999",
		want: []string{"PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINERS"},
	}, {
		name: "parameter server, 3000 workers: the launcher's lists too",
		job:  testutil.MakePaddleJob("bps", "").PS(1).Workers(3000).Obj(), ps: 1,
		pod:  "bps-ps-0",
		want: []string{"PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINERS", "PADDLE_TRAINERS_ENDPOINTS", "PADDLE_SERVERS_ENDPOINTS"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			workers := tc.job.Spec.ReplicaCount(paddlev1.ReplicaWorker)
			env := renderEnv(t, tc.job, ips(tc.job.Name, tc.ps, workers), nil)[tc.pod]
			if n := len(env["PADDLE_TRAINER_ENDPOINTS"]); n <= 48000 {
				t.Fatalf("test set-up: the list is %d characters, not over Paddle's launcher's 48,000", n)
			}
			for _, name := range tc.want {
				v, ok := env[name]
				if !ok {
					t.Errorf("%s is not in the environment", name)
					continue
				}
				if n := len(splitList(v)); name != "PADDLE_SERVERS_ENDPOINTS" && n != workers {
					t.Errorf("%s lists %d workers, want %d", name, n, workers)
				}
				if b := envStringBytes(name, v); b > MaxEnvStringBytes {
					t.Errorf("%s is %d bytes, over the kernel's %d", name, b, MaxEnvStringBytes)
				}
			}
		})
	}
}

// The worker lists are in the environment exactly up to the kernel's limit,
// NAME=value and its NUL, for a collective job outside Host intranet; a
// parameter-server job's always are (validation refuses one that does
// not fit); an elastic job's never.
func TestWorkerListsInEnv(t *testing.T) {
	// fits is the longest value of PADDLE_TRAINER_ENDPOINTS that still fits.
	fits := strings.Repeat("x", MaxEnvStringBytes-len("PADDLE_TRAINER_ENDPOINTS=")-1)
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		list string
		want bool
	}{
		{"collective, at the limit", testutil.MakePaddleJob("a", "").Workers(2).Obj(), fits, true},
		{"collective, one byte over", testutil.MakePaddleJob("a", "").Workers(2).Obj(), fits + "x", false},
		{"collective, Service intranet", testutil.MakePaddleJob("a", "").Workers(2).Intranet(paddlev1.IntranetService).Obj(), "a:1,b:1", true},
		{"parameter server, over the limit: refused at admission instead", testutil.MakePaddleJob("a", "").PS(1).Workers(2).Obj(), fits + "x", true},
		{"Host intranet, parameter server: the PS launcher needs them and never uses its master", testutil.MakePaddleJob("a", "").PS(1).Workers(2).Intranet(paddlev1.IntranetHost).Obj(), "a:1,b:1", true},
		{"Host intranet, collective", testutil.MakePaddleJob("a", "").Workers(2).Intranet(paddlev1.IntranetHost).Obj(), "a:1,b:1", false},
		{"elastic", testutil.MakePaddleJob("a", "").Workers(2).Elastic(1, 3, "http://etcd:2379").Obj(), "a:1,b:1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := workerListsInEnv(&tc.job.Spec, tc.list); got != tc.want {
				t.Errorf("workerListsInEnv = %v, want %v", got, tc.want)
			}
		})
	}
}
