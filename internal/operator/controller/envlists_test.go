package controller

import (
	"fmt"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

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
			ranges := map[string]podcontract.PortRange{}
			n := 0
			for _, rt := range paddlev1.ReplicaTypes {
				for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
					name := paddlev1.PodName("j", rt, i)
					ips[name] = fmt.Sprintf("10.0.0.%d", n+1)
					if intranet == paddlev1.IntranetHost {
						ips[name] = "192.168.1.1"
						ranges[name] = podcontract.PortRange{First: int32(24000 + 3*n), Count: 3}
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
	hostRanges := map[string]podcontract.PortRange{"hc-worker-0": {First: 24000, Count: 3}, "hc-worker-1": {First: 24003, Count: 3}}

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

	tests := []backupFileCase{{
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
		t.Run(tc.name, func(t *testing.T) { checkBackupFileCase(t, tc) })
	}
}

// backupFileCase is a pod whose worker list Paddle reads from the backup
// file.
type backupFileCase struct {
	name       string
	job        *paddlev1.PaddleJob
	ips        map[string]string
	hostRanges map[string]podcontract.PortRange
	pod        string
	// want are variables that must have these values ("<unset>": absent).
	want map[string]string
	// wantBackup is PADDLE_TRAINER_ENDPOINTS as Paddle reads it.
	wantBackup string
}

// checkBackupFileCase checks the pod's variables, then the worker list as
// Paddle reads it: every worker, and wantBackup when the case gives one.
func checkBackupFileCase(t *testing.T, tc backupFileCase) {
	t.Helper()
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
				if b := podcontract.EnvStringBytes(name, v); b > podcontract.MaxEnvStringBytes {
					t.Errorf("%s is %d bytes, over the kernel's %d", name, b, podcontract.MaxEnvStringBytes)
				}
			}
		})
	}
}
