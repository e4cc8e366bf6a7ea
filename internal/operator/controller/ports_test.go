package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestParsePortRange(t *testing.T) {
	tests := []struct {
		in      string
		want    portRange
		wantErr bool
	}{
		{in: "23000-23002", want: portRange{First: 23000, Count: 3}},
		{in: "24000-24005", want: portRange{First: 24000, Count: 6}},
		{in: "23000-23001", wantErr: true}, // no room for the process port
		{in: "23000", wantErr: true},
		{in: "a-b", wantErr: true},
		{in: "0-5", wantErr: true},
		{in: "65534-65540", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		got, err := parsePortRange(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("parsePortRange(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("round trip of %q gave %q", tc.in, got.String())
		}
	}
}

func TestPortLayout(t *testing.T) {
	r := portRange{First: 23000, Count: 6}
	if r.processPorts() != 4 || r.glooPort() != 23004 || r.masterPort() != 23005 || r.last() != 23005 {
		t.Errorf("layout of %v: process %d, gloo %d, master %d", r, r.processPorts(), r.glooPort(), r.masterPort())
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
		if got := portsPerPod(tc.job.Spec.Worker); got != tc.want {
			t.Errorf("%s: portsPerPod = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestFirstFit(t *testing.T) {
	tests := []struct {
		name   string
		used   []portRange
		lo, hi int32
		count  int32
		want   portRange
		ok     bool
	}{
		{"empty pool", nil, 100, 199, 3, portRange{100, 3}, true},
		{"after a used range", []portRange{{100, 3}}, 100, 199, 3, portRange{103, 3}, true},
		{"into a gap that fits", []portRange{{100, 3}, {106, 3}}, 100, 199, 3, portRange{103, 3}, true},
		{"past a gap too small", []portRange{{100, 3}, {105, 3}}, 100, 199, 3, portRange{108, 3}, true},
		{"unsorted input", []portRange{{106, 3}, {100, 3}, {103, 3}}, 100, 199, 3, portRange{109, 3}, true},
		{"used range below the pool", []portRange{{50, 10}}, 100, 199, 3, portRange{100, 3}, true},
		{"exactly fills the pool", []portRange{{100, 97}}, 100, 199, 3, portRange{197, 3}, true},
		{"pool exhausted", []portRange{{100, 98}}, 100, 199, 3, portRange{}, false},
	}
	for _, tc := range tests {
		got, ok := firstFit(tc.used, tc.lo, tc.hi, tc.count)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: firstFit = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHostPortAllocator(t *testing.T) {
	a := newHostPortAllocator(24000, 24011)
	key := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }
	live := map[types.NamespacedName]portRange{key("other-ps-0"): {24000, 3}}

	got, err := a.allocate(live, []types.NamespacedName{key("a-ps-0"), key("a-worker-0")}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.NamespacedName]portRange{key("a-ps-0"): {24003, 3}, key("a-worker-0"): {24006, 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("first allocation (-want +got):\n%s", diff)
	}

	// The cache has not shown a-ps-0 and a-worker-0 yet: another job must not get their ports.
	got, err = a.allocate(live, []types.NamespacedName{key("b-ps-0")}, 3)
	if err != nil || got[key("b-ps-0")] != (portRange{24009, 3}) {
		t.Fatalf("allocation beside pending ones = %v, %v; want 24009-24011", got, err)
	}

	// The pool is full now.
	if _, err := a.allocate(live, []types.NamespacedName{key("c-ps-0")}, 3); err == nil {
		t.Fatal("allocation from a full pool succeeded")
	}

	// A pod whose create failed gives its range back.
	a.release(key("b-ps-0"))
	got, err = a.allocate(live, []types.NamespacedName{key("c-ps-0")}, 3)
	if err != nil || got[key("c-ps-0")] != (portRange{24009, 3}) {
		t.Fatalf("allocation after release = %v, %v", got, err)
	}

	// Once the cache shows a pod, its live range counts and the pending entry goes;
	// a pod already live keeps its range.
	live[key("a-ps-0")] = portRange{24003, 3}
	got, err = a.allocate(live, []types.NamespacedName{key("a-ps-0")}, 3)
	if err != nil || got[key("a-ps-0")] != (portRange{24003, 3}) {
		t.Fatalf("live pod's range = %v, %v", got, err)
	}
	if _, pending := a.pending[key("a-ps-0")]; pending {
		t.Error("a live pod is still pending")
	}
}
