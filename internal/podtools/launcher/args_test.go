package launcher

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestPServerAndTrainerArgs(t *testing.T) {
	cfg := ClusterConfig{JobName: "paddle-cluster-job", JobPath: "/home/jobpath", NIC: "eth0", Port: 7164, PortsNum: 2, PortsNumSparse: 2, GradientNum: 3}
	// The three-node Job's pods, already in trainer-id order.
	pservers := []netip.Addr{netip.MustParseAddr("192.168.129.66"), netip.MustParseAddr("192.168.129.71"), netip.MustParseAddr("192.168.223.143")}
	common := []string{
		"--nics=eth0", "--port=7164", "--ports_num=2", "--ports_num_for_sparse=2", "--num_gradient_servers=3",
		"--pservers=192.168.129.66,192.168.129.71,192.168.223.143", "--comment=paddle_process_by_paddle",
	}

	if got := pserverArgs(cfg, pservers); !reflect.DeepEqual(got, common) {
		t.Errorf("pserverArgs() =\n  %q\nwant\n  %q", got, common)
	}

	tests := []struct {
		name    string
		id      int
		extra   []string
		want    []string
		wantErr string
	}{
		{
			name: "no extra arguments",
			id:   2,
			want: append(append([]string{}, common...), "--trainer_id=2", "--save_dir=/home/jobpath/paddle-cluster-job/output"),
		},
		{
			name: "the three-node Job's start.sh arguments, repeats of generated flags dropped",
			id:   0,
			extra: []string{"--dot_period=10", "--ports_num=2", "--ports_num_for_sparse=2", "--log_period=50", "--num_passes=10",
				"--trainer_count=4", "--saving_period=1", "--local=0", "--config=trainer_config.lr.py", "--use_gpu=0"},
			want: append(append([]string{}, common...),
				"--dot_period=10", "--log_period=50", "--num_passes=10", "--trainer_count=4", "--saving_period=1",
				"--local=0", "--config=trainer_config.lr.py", "--use_gpu=0",
				"--trainer_id=0", "--save_dir=/home/jobpath/paddle-cluster-job/output"),
		},
		{
			name:  "non-flag arguments pass through in order",
			id:    1,
			extra: []string{"--config", "trainer_config.py"},
			want: append(append([]string{}, common...), "--config", "trainer_config.py",
				"--trainer_id=1", "--save_dir=/home/jobpath/paddle-cluster-job/output"),
		},
		{name: "contradicting the trainer id", id: 1, extra: []string{"--trainer_id=0"}, wantErr: `extra argument "--trainer_id=0" contradicts the generated --trainer_id=1`},
		{name: "contradicting the port", id: 1, extra: []string{"-port=7000"}, wantErr: `contradicts the generated --port=7164`},
		{name: "a generated flag without a value", id: 1, extra: []string{"--pservers", "10.0.0.1"}, wantErr: `extra argument "--pservers" contradicts`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trainerArgs(cfg, pservers, tt.id, tt.extra)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("trainerArgs() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("trainerArgs() =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestPServerArgsIPv6(t *testing.T) {
	cfg := ClusterConfig{JobName: "j", JobPath: "/p", NIC: "eth0", Port: 7164, PortsNum: 1, GradientNum: 2}
	got := pserverArgs(cfg, []netip.Addr{netip.MustParseAddr("fd00::9"), netip.MustParseAddr("fd00::a")})
	if want := "--pservers=fd00::9,fd00::a"; got[5] != want {
		t.Errorf("pservers flag = %q, want %q", got[5], want)
	}
}

func TestSingleTrainerArgs(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		extra []string
		want  []string
	}{
		{
			name:  "a single-node Job: no job variables, the extra arguments alone",
			extra: []string{"--config=trainer_config.lr.py", "--save_dir=./output"},
			want:  []string{"--config=trainer_config.lr.py", "--save_dir=./output"},
		},
		{
			name:  "with JOB_PATH and JOB_NAME",
			env:   map[string]string{"JOB_PATH": "/mnt", "JOB_NAME": "quickstart"},
			extra: []string{"--num_passes=15", "--trainer_id=0"},
			want:  []string{"--num_passes=15", "--trainer_id=0", "--save_dir=/mnt/quickstart/output"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ReadEnv(func(k string) string { return tt.env[k] })
			got, err := singleTrainerArgs(env, tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("singleTrainerArgs() = %q, want %q", got, tt.want)
			}
		})
	}
}
