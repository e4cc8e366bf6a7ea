package main

import (
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
)

func TestParseLegacyCommand(t *testing.T) {
	v1Ignored := []string{
		"--config=trainer_config.py", "--trainer_count=4", "--use_gpu=0", "--log_period=20", "--dot_period=10",
		"--saving_period=1", "--show_parameter_stats_period=100", "--test_all_data_in_one_period=1",
	}
	tests := []struct {
		name        string
		args        []string
		want        legacyFlags
		wantOutput  string
		wantPasses  int
		wantResume  bool
		wantIgnored []string
		wantErr     string
	}{
		{
			name: "v1 trainer command line",
			args: append([]string{
				"--pservers=10.0.0.1,10.0.0.2", "--port=7164", "--ports_num=1", "--ports_num_for_sparse=1",
				"--trainer_id=1", "--num_gradient_servers=2", "--save_dir=/out", "--num_passes=3",
				"--nics=eth0", "--comment=ctr", "--local=0",
			}, v1Ignored...),
			want: legacyFlags{
				pservers: "10.0.0.1,10.0.0.2", port: 7164, portsNum: 1, portsNumForSparse: 1,
				trainerID: 1, trainers: 2, nics: "eth0", comment: "ctr", local: 0,
			},
			wantOutput: "/out", wantPasses: 3, wantIgnored: v1Ignored,
		},
		{
			name:        "values after a space",
			args:        []string{"--use_gpu", "false", "-pservers", "a,b", "--resume", "--num_passes", "2", "--dot_period", "-trainer_id=1"},
			want:        legacyFlags{pservers: "a,b", port: defaultPServerPort, portsNum: 1, trainerID: 1, trainers: 1, local: -1},
			wantOutput:  "./output",
			wantPasses:  2,
			wantResume:  true,
			wantIgnored: []string{"--use_gpu false", "--dot_period"},
		},
		{
			name:       "new names of the same settings",
			args:       []string{"--output=/o", "--passes=7", "--local=1"},
			want:       legacyFlags{port: defaultPServerPort, portsNum: 1, trainers: 1, local: 1},
			wantOutput: "/o", wantPasses: 7,
		},
		{name: "local is 0 or 1", args: []string{"--local=2"}, wantErr: "--local=2"},
		{name: "help is not a v1 flag", args: []string{"--config=x", "-h"}, wantErr: "help requested"},
		{name: "known flag, bad value", args: []string{"--port=http"}, wantErr: "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PADDLE_OUTPUT_DIR", "")
			c, err := parseLegacyCommand("train", tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.legacy != tt.want {
				t.Errorf("legacy flags %+v, want %+v", c.legacy, tt.want)
			}
			if c.train.output != tt.wantOutput || c.train.passes != tt.wantPasses || c.train.resume != tt.wantResume {
				t.Errorf("output %q passes %d resume %v, want %q %d %v",
					c.train.output, c.train.passes, c.train.resume, tt.wantOutput, tt.wantPasses, tt.wantResume)
			}
			if !reflect.DeepEqual(c.ignored, tt.wantIgnored) {
				t.Errorf("ignored %q, want %q", c.ignored, tt.wantIgnored)
			}
		})
	}
}

func TestLegacyEndpointsAndLocal(t *testing.T) {
	l := legacyFlags{pservers: "10.0.0.1, ps-1.job", port: 7164, local: -1}
	got, err := l.endpoints()
	if want := []string{"10.0.0.1:7164", "ps-1.job:7164"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("endpoints = %q, %v; want %q", got, err, want)
	}
	tests := []struct {
		pservers string
		local    int
		want     bool
	}{
		{"", -1, true}, {"a", -1, false}, {"a", 1, true}, {"a", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		if got := (&legacyFlags{pservers: tt.pservers, local: tt.local}).trainsAlone(); got != tt.want {
			t.Errorf("--pservers=%q --local=%d trains alone: %v, want %v", tt.pservers, tt.local, got, tt.want)
		}
	}
}

func TestOwnPServerIndex(t *testing.T) {
	hosts := []string{"10.0.0.1", "10.0.0.2", "127.0.0.9"}
	local := func() ([]net.IP, error) {
		return []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.2")}, nil
	}
	tests := []struct {
		name, ip, podIP string
		want            int
		wantErr         string
	}{
		{"--ip", "127.0.0.9", "10.0.0.1", 2, ""},
		{"POD_IP", "", "10.0.0.1", 0, ""},
		{"interface address", "", "", 1, ""},
		{"--ip not listed", "10.9.9.9", "", 0, "--ip=10.9.9.9 is not in --pservers"},
		{"POD_IP not listed", "", "10.9.9.9", 0, "POD_IP=10.9.9.9 is not in --pservers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ownPServerIndex(tt.ip, tt.podIP, hosts, local)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("index = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	if _, err := ownPServerIndex("", "", []string{"10.1.1.1"}, local); err == nil || !strings.Contains(err.Error(), "set --ip or POD_IP") {
		t.Errorf("no address of this machine listed: %v", err)
	}
}
