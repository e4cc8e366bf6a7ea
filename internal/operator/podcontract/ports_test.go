package podcontract

import (
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestParsePortRange(t *testing.T) {
	tests := []struct {
		in      string
		want    PortRange
		wantErr bool
	}{
		{in: "23000-23002", want: PortRange{First: 23000, Count: 3}},
		{in: "24000-24005", want: PortRange{First: 24000, Count: 6}},
		{in: "23000-23001", wantErr: true}, // no room for the process port
		{in: "23000", wantErr: true},
		{in: "a-b", wantErr: true},
		{in: "0-5", wantErr: true},
		{in: "65534-65540", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParsePortRange(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ParsePortRange(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("round trip of %q gave %q", tc.in, got.String())
		}
	}
}

func TestPortLayout(t *testing.T) {
	r := PortRange{First: 23000, Count: 6}
	if r.ProcessPorts() != 4 || r.GlooPort() != 23004 || r.MasterPort() != 23005 || r.Last() != 23005 {
		t.Errorf("layout of %v: process %d, gloo %d, master %d", r, r.ProcessPorts(), r.GlooPort(), r.MasterPort())
	}
}

func TestPortsPerPod(t *testing.T) {
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		want int32
	}{
		{"CPU pod: one process port", testutil.MakePaddleJob("j", "").Workers(1).Obj(), 3},
		{"four GPUs: four process ports", testutil.MakePaddleJob("j", "").Workers(1).GPUs(paddlev1.ReplicaWorker, 4).Obj(), 6},
	}
	for _, tc := range tests {
		if got := PortsPerPod(tc.job.Spec.Worker); got != tc.want {
			t.Errorf("%s: PortsPerPod = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// PodGPUs saturates: what Validate refuses cannot wrap the port arithmetic.
func TestPortsPerPodDoNotWrap(t *testing.T) {
	job := testutil.MakePaddleJob("j", "").Workers(1).GPUs(paddlev1.ReplicaWorker, 4294967294).Obj()
	if n := PortsPerPod(job.Spec.Worker); n <= 0 || n > MaxGPUsPerPod+1+ExtraPorts {
		t.Errorf("PortsPerPod = %d", n)
	}
}
