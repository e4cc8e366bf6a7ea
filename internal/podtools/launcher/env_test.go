package launcher

import (
	"net/netip"
	"strings"
	"testing"
)

// threeNodeJobEnv is the environment of the distributed-training
// tutorial's three-node Job (config/samples/seed001/job.yaml).
var threeNodeJobEnv = map[string]string{
	"JOB_NAME":                     "paddle-cluster-job",
	"JOB_PATH":                     "/home/jobpath",
	"JOB_NAMESPACE":                "default",
	"TRAIN_CONFIG_DIR":             "recommendation",
	"CONF_PADDLE_NIC":              "eth0",
	"CONF_PADDLE_PORT":             "7164",
	"CONF_PADDLE_PORTS_NUM":        "2",
	"CONF_PADDLE_PORTS_NUM_SPARSE": "2",
	"CONF_PADDLE_GRADIENT_NUM":     "3",
}

// envWith is the three-node Job's environment with some variables changed; an empty
// value removes the variable.
func envWith(changes map[string]string) Env {
	m := map[string]string{}
	for k, v := range threeNodeJobEnv {
		m[k] = v
	}
	for k, v := range changes {
		m[k] = v
	}
	return ReadEnv(func(k string) string { return m[k] })
}

func TestClusterConfig(t *testing.T) {
	tests := []struct {
		name    string
		changes map[string]string
		want    ClusterConfig
		wantErr []string // substrings of the error, each naming a variable
	}{
		{
			name: "three-node Job",
			want: ClusterConfig{JobName: "paddle-cluster-job", JobPath: "/home/jobpath", NIC: "eth0", Port: 7164, PortsNum: 2, PortsNumSparse: 2, GradientNum: 3},
		},
		{
			name:    "sparse ports may be zero, values are trimmed",
			changes: map[string]string{"CONF_PADDLE_PORTS_NUM_SPARSE": "0", "CONF_PADDLE_PORT": " 7164 "},
			want:    ClusterConfig{JobName: "paddle-cluster-job", JobPath: "/home/jobpath", NIC: "eth0", Port: 7164, PortsNum: 2, GradientNum: 3},
		},
		{
			name:    "every missing variable is named",
			changes: map[string]string{"JOB_NAME": "", "JOB_PATH": "", "CONF_PADDLE_NIC": "", "CONF_PADDLE_PORTS_NUM_SPARSE": ""},
			wantErr: []string{"JOB_NAME is not set", "JOB_PATH is not set", "CONF_PADDLE_NIC is not set", "CONF_PADDLE_PORTS_NUM_SPARSE is not set"},
		},
		{
			name:    "not a number",
			changes: map[string]string{"CONF_PADDLE_PORT": "http", "CONF_PADDLE_GRADIENT_NUM": "three"},
			wantErr: []string{`CONF_PADDLE_PORT="http": want an integer from 1 to 65535`, `CONF_PADDLE_GRADIENT_NUM="three"`},
		},
		{
			name:    "out of range",
			changes: map[string]string{"CONF_PADDLE_PORT": "70000", "CONF_PADDLE_PORTS_NUM": "0", "CONF_PADDLE_PORTS_NUM_SPARSE": "-1", "CONF_PADDLE_GRADIENT_NUM": "0"},
			wantErr: []string{`CONF_PADDLE_PORT="70000"`, `CONF_PADDLE_PORTS_NUM="0"`, `CONF_PADDLE_PORTS_NUM_SPARSE="-1"`, `CONF_PADDLE_GRADIENT_NUM="0"`},
		},
		{
			name:    "port range past 65535",
			changes: map[string]string{"CONF_PADDLE_PORT": "65534", "CONF_PADDLE_PORTS_NUM": "2", "CONF_PADDLE_PORTS_NUM_SPARSE": "1"},
			wantErr: []string{"CONF_PADDLE_PORT=65534 with 2 dense and 1 sparse ports runs past port 65535"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envWith(tt.changes).ClusterConfig()
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ClusterConfig() = %+v, want an error", got)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ClusterConfig() error: %v", err)
			}
			if got != tt.want {
				t.Errorf("ClusterConfig() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParallelismOverride(t *testing.T) {
	tests := []struct {
		value   string
		want    int
		wantErr bool
	}{
		{value: "", want: 0},
		{value: "3", want: 3},
		{value: "0", wantErr: true},
		{value: "-2", wantErr: true},
		{value: "x", wantErr: true},
	}
	for _, tt := range tests {
		got, err := envWith(map[string]string{"PADDLE_PARALLELISM": tt.value}).ParallelismOverride()
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("PADDLE_PARALLELISM=%q: got %d, %v; want %d, error %v", tt.value, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "PADDLE_PARALLELISM") {
			t.Errorf("error %q does not name PADDLE_PARALLELISM", err)
		}
	}
}

func TestPodAddr(t *testing.T) {
	tests := []struct {
		value   string
		want    netip.Addr
		wantErr bool
	}{
		{value: "", want: netip.Addr{}},
		{value: "10.0.0.9", want: netip.MustParseAddr("10.0.0.9")},
		{value: "::ffff:10.0.0.9", want: netip.MustParseAddr("10.0.0.9")},
		{value: "fd00::1", want: netip.MustParseAddr("fd00::1")},
		{value: "pod-a", wantErr: true},
	}
	for _, tt := range tests {
		got, err := envWith(map[string]string{"POD_IP": tt.value}).PodAddr()
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("POD_IP=%q: got %v, %v; want %v, error %v", tt.value, got, err, tt.want, tt.wantErr)
		}
	}
}
