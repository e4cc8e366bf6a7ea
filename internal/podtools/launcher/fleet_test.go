package launcher

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestFleetConfig(t *testing.T) {
	tests := []struct {
		name    string
		changes map[string]string // over the three-node Job's environment; "" removes
		want    FleetConfig
		wantErr []string
	}{
		{
			name: "three-node Job: the trainer above the pserver's 2+2 ports",
			want: FleetConfig{JobName: "paddle-cluster-job", JobPath: "/home/jobpath", PServerPort: 7164, TrainerPort: 7168, GradientNum: 3},
		},
		{
			name: "no CONF_PADDLE_*: port 7164, one pserver port, the trainer on the next",
			changes: map[string]string{"CONF_PADDLE_NIC": "", "CONF_PADDLE_PORT": "", "CONF_PADDLE_PORTS_NUM": "",
				"CONF_PADDLE_PORTS_NUM_SPARSE": "", "CONF_PADDLE_GRADIENT_NUM": ""},
			want: FleetConfig{JobName: "paddle-cluster-job", JobPath: "/home/jobpath", PServerPort: 7164, TrainerPort: 7165},
		},
		{
			name:    "another port, sparse ports zero",
			changes: map[string]string{"CONF_PADDLE_PORT": " 6000 ", "CONF_PADDLE_PORTS_NUM": "1", "CONF_PADDLE_PORTS_NUM_SPARSE": "0"},
			want:    FleetConfig{JobName: "paddle-cluster-job", JobPath: "/home/jobpath", PServerPort: 6000, TrainerPort: 6001, GradientNum: 3},
		},
		{
			name:    "the job's name and path are required",
			changes: map[string]string{"JOB_NAME": "", "JOB_PATH": ""},
			wantErr: []string{"JOB_NAME is not set", "JOB_PATH is not set"},
		},
		{
			name:    "invalid numbers are named",
			changes: map[string]string{"CONF_PADDLE_PORT": "0", "CONF_PADDLE_PORTS_NUM": "0", "CONF_PADDLE_PORTS_NUM_SPARSE": "x", "CONF_PADDLE_GRADIENT_NUM": "0"},
			wantErr: []string{`CONF_PADDLE_PORT="0"`, `CONF_PADDLE_PORTS_NUM="0"`, `CONF_PADDLE_PORTS_NUM_SPARSE="x"`, `CONF_PADDLE_GRADIENT_NUM="0"`},
		},
		{
			name:    "no port left for the trainer",
			changes: map[string]string{"CONF_PADDLE_PORT": "65533"},
			wantErr: []string{"CONF_PADDLE_PORT=65533 with 2 dense and 2 sparse ports leaves no port for the trainer (it takes port 65537)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envWith(tt.changes).FleetConfig()
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("FleetConfig() = %+v, want an error", got)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("FleetConfig() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// envMap turns K=V entries into a map, failing on a repeated name.
func envMap(t *testing.T, vars []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, v := range vars {
		name, value, ok := strings.Cut(v, "=")
		if !ok {
			t.Fatalf("%q is not NAME=value", v)
		}
		if _, dup := m[name]; dup {
			t.Fatalf("%s set twice in %q", name, vars)
		}
		m[name] = value
	}
	return m
}

// The variables of each process of the three-node Job's pods in fleet mode.
// The ids come from the pod IPs sorted as addresses, not the pods' order.
func TestFleetEnv(t *testing.T) {
	peers := []corev1.Pod{
		pod("paddle-cluster-job-aaaaa", corev1.PodRunning, "10.0.0.10"),
		pod("paddle-cluster-job-bbbbb", corev1.PodRunning, "10.0.0.9"),
		pod("paddle-cluster-job-ccccc", corev1.PodRunning, "10.0.0.11"),
	}
	order, err := trainerOrder(peers)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := envWith(nil).FleetConfig()
	if err != nil {
		t.Fatal(err)
	}
	job := fleetJob{
		jobID:       jobID("default", cfg.JobName),
		outputDir:   outputDir(cfg.JobPath, cfg.JobName),
		pods:        order,
		pserverPort: cfg.PServerPort,
		trainerPort: cfg.TrainerPort,
	}
	common := map[string]string{
		"PADDLE_PSERVERS_IP_PORT_LIST": "10.0.0.9:7164,10.0.0.10:7164,10.0.0.11:7164",
		"PADDLE_TRAINER_ENDPOINTS":     "10.0.0.9:7168,10.0.0.10:7168,10.0.0.11:7168",
		"PADDLE_TRAINERS_NUM":          "3",
		"TRAINERS":                     "3",
		"PADDLE_JOB_ID":                "default-paddle-cluster-job",
		"PADDLE_OUTPUT_DIR":            "/home/jobpath/paddle-cluster-job/output",
	}
	with := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name string
		role string
		self string // the pod's IP
		want map[string]string
	}{
		{name: "pserver of 10.0.0.9", role: rolePServer, self: "10.0.0.9", want: with(map[string]string{
			"TRAINING_ROLE": "PSERVER", "PADDLE_TRAINING_ROLE": "PSERVER", "POD_IP": "10.0.0.9", "PADDLE_PORT": "7164",
			"PADDLE_TRAINER_ID": "0", "TRAINER_ID": "0"})},
		{name: "trainer of 10.0.0.9", role: roleTrainer, self: "10.0.0.9", want: with(map[string]string{
			"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINING_ROLE": "TRAINER", "POD_IP": "10.0.0.9", "PADDLE_PORT": "7168",
			"PADDLE_TRAINER_ID": "0", "TRAINER_ID": "0"})},
		{name: "pserver of 10.0.0.10", role: rolePServer, self: "10.0.0.10", want: with(map[string]string{
			"TRAINING_ROLE": "PSERVER", "PADDLE_TRAINING_ROLE": "PSERVER", "POD_IP": "10.0.0.10", "PADDLE_PORT": "7164",
			"PADDLE_TRAINER_ID": "1", "TRAINER_ID": "1"})},
		{name: "trainer of 10.0.0.10", role: roleTrainer, self: "10.0.0.10", want: with(map[string]string{
			"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINING_ROLE": "TRAINER", "POD_IP": "10.0.0.10", "PADDLE_PORT": "7168",
			"PADDLE_TRAINER_ID": "1", "TRAINER_ID": "1"})},
		{name: "trainer of 10.0.0.11", role: roleTrainer, self: "10.0.0.11", want: with(map[string]string{
			"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINING_ROLE": "TRAINER", "POD_IP": "10.0.0.11", "PADDLE_PORT": "7168",
			"PADDLE_TRAINER_ID": "2", "TRAINER_ID": "2"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFleetEnvOf(t, job, order, tt.role, netip.MustParseAddr(tt.self), tt.want)
		})
	}
}

// checkFleetEnvOf checks the environment job gives the pod of IP self in
// role: exactly want, and its own POD_IP:PADDLE_PORT at its trainer ID in
// its role's list, as PaddleCloudRoleMaker reads them.
func checkFleetEnvOf(t *testing.T, job fleetJob, order []netip.Addr, role string, self netip.Addr, want map[string]string) {
	t.Helper()
	id, err := trainerID(order, self)
	if err != nil {
		t.Fatal(err)
	}
	got := envMap(t, job.env(role, id))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("env =\n  %v\nwant\n  %v", got, want)
	}
	// What PaddleCloudRoleMaker does with them.
	endpoint := got["POD_IP"] + ":" + got["PADDLE_PORT"]
	list := got["PADDLE_PSERVERS_IP_PORT_LIST"]
	if role == roleTrainer {
		list = got["PADDLE_TRAINER_ENDPOINTS"]
	}
	if idx := strings.Split(list, ",")[id]; idx != endpoint {
		t.Errorf("entry %d of the %s list is %s, want POD_IP:PADDLE_PORT %s", id, role, idx, endpoint)
	}
}

// IPv6 pod IPs are not bracketed, so POD_IP:PADDLE_PORT still appears in
// the list as written.
func TestFleetEnvIPv6(t *testing.T) {
	job := fleetJob{jobID: "ns-j", pods: []netip.Addr{netip.MustParseAddr("fd00::9"), netip.MustParseAddr("fd00::a")},
		pserverPort: 7164, trainerPort: 7165}
	got := envMap(t, job.env(rolePServer, 1))
	if want := "fd00::9:7164,fd00::a:7164"; got["PADDLE_PSERVERS_IP_PORT_LIST"] != want {
		t.Errorf("PADDLE_PSERVERS_IP_PORT_LIST = %q, want %q", got["PADDLE_PSERVERS_IP_PORT_LIST"], want)
	}
	if _, ok := got["PADDLE_OUTPUT_DIR"]; ok {
		t.Error("PADDLE_OUTPUT_DIR set without an output directory")
	}
	if self := got["POD_IP"] + ":" + got["PADDLE_PORT"]; !strings.Contains(got["PADDLE_PSERVERS_IP_PORT_LIST"], self) {
		t.Errorf("%s is not in the list", self)
	}
}

func TestFleetAloneEnv(t *testing.T) {
	tests := []struct {
		name      string
		jobID     string
		outputDir string
		want      map[string]string
	}{
		{
			name: "single-node Job: no job variables",
			want: map[string]string{"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINING_ROLE": "TRAINER", "PADDLE_TRAINERS_NUM": "1",
				"PADDLE_TRAINER_ID": "0", "TRAINER_ID": "0", "TRAINERS": "1"},
		},
		{
			name: "a one-pod Job", jobID: "default-quickstart", outputDir: "/mnt/quickstart/output",
			want: map[string]string{"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINING_ROLE": "TRAINER", "PADDLE_TRAINERS_NUM": "1",
				"PADDLE_TRAINER_ID": "0", "TRAINER_ID": "0", "TRAINERS": "1",
				"PADDLE_JOB_ID": "default-quickstart", "PADDLE_OUTPUT_DIR": "/mnt/quickstart/output"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := envMap(t, fleetAloneEnv(tt.jobID, tt.outputDir))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("env = %v, want %v", got, tt.want)
			}
			// No pserver list: PaddleCloudRoleMaker trains locally.
			if _, ok := got["PADDLE_PSERVERS_IP_PORT_LIST"]; ok {
				t.Error("a lone trainer got a pserver list")
			}
		})
	}
}

func TestWithVars(t *testing.T) {
	base := []string{"PATH=/bin", "PADDLE_PSERVERS_IP_PORT_LIST=stale:1", "POD_IP=10.0.0.1", "TRAINER_ID=7", "HOME=/root"}
	got := withVars(base, fleetVars, []string{"TRAINER_ID=0", "TRAINERS=1"})
	want := []string{"PATH=/bin", "POD_IP=10.0.0.1", "HOME=/root", "TRAINER_ID=0", "TRAINERS=1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("withVars() = %q, want %q", got, want)
	}
	got = withVars(base, nil, []string{"POD_IP=10.0.0.2"})
	want = []string{"PATH=/bin", "PADDLE_PSERVERS_IP_PORT_LIST=stale:1", "TRAINER_ID=7", "HOME=/root", "POD_IP=10.0.0.2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("withVars() = %q, want %q", got, want)
	}
}

func TestLegacyIR(t *testing.T) {
	if got, want := legacyIR([]string{"PATH=/bin"}), []string{"PATH=/bin", "FLAGS_enable_pir_api=0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("legacyIR() = %q, want %q", got, want)
	}
	// The pod's own choice is kept.
	if got, want := legacyIR([]string{"FLAGS_enable_pir_api=1"}), []string{"FLAGS_enable_pir_api=1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("legacyIR() = %q, want %q", got, want)
	}
}
