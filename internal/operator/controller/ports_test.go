package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

func TestFirstFit(t *testing.T) {
	tests := []struct {
		name   string
		used   []podcontract.PortRange
		lo, hi int32
		count  int32
		want   podcontract.PortRange
		ok     bool
	}{
		{"empty pool", nil, 100, 199, 3, podcontract.PortRange{First: 100, Count: 3}, true},
		{"after a used range", []podcontract.PortRange{{First: 100, Count: 3}}, 100, 199, 3, podcontract.PortRange{First: 103, Count: 3}, true},
		{"into a gap that fits", []podcontract.PortRange{{First: 100, Count: 3}, {First: 106, Count: 3}}, 100, 199, 3, podcontract.PortRange{First: 103, Count: 3}, true},
		{"past a gap too small", []podcontract.PortRange{{First: 100, Count: 3}, {First: 105, Count: 3}}, 100, 199, 3, podcontract.PortRange{First: 108, Count: 3}, true},
		{"unsorted input", []podcontract.PortRange{{First: 106, Count: 3}, {First: 100, Count: 3}, {First: 103, Count: 3}}, 100, 199, 3, podcontract.PortRange{First: 109, Count: 3}, true},
		{"used range below the pool", []podcontract.PortRange{{First: 50, Count: 10}}, 100, 199, 3, podcontract.PortRange{First: 100, Count: 3}, true},
		{"exactly fills the pool", []podcontract.PortRange{{First: 100, Count: 97}}, 100, 199, 3, podcontract.PortRange{First: 197, Count: 3}, true},
		{"pool exhausted", []podcontract.PortRange{{First: 100, Count: 98}}, 100, 199, 3, podcontract.PortRange{}, false},
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
	live := map[types.NamespacedName]podcontract.PortRange{key("other-ps-0"): {First: 24000, Count: 3}}

	got, err := a.allocate(live, []types.NamespacedName{key("a-ps-0"), key("a-worker-0")}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.NamespacedName]podcontract.PortRange{key("a-ps-0"): {First: 24003, Count: 3}, key("a-worker-0"): {First: 24006, Count: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("first allocation (-want +got):\n%s", diff)
	}

	// The cache has not shown a-ps-0 and a-worker-0 yet: another job must not get their ports.
	got, err = a.allocate(live, []types.NamespacedName{key("b-ps-0")}, 3)
	if err != nil || got[key("b-ps-0")] != (podcontract.PortRange{First: 24009, Count: 3}) {
		t.Fatalf("allocation beside pending ones = %v, %v; want 24009-24011", got, err)
	}

	// The pool is full now.
	if _, err := a.allocate(live, []types.NamespacedName{key("c-ps-0")}, 3); err == nil {
		t.Fatal("allocation from a full pool succeeded")
	}

	// A pod whose create failed gives its range back.
	a.release(key("b-ps-0"))
	got, err = a.allocate(live, []types.NamespacedName{key("c-ps-0")}, 3)
	if err != nil || got[key("c-ps-0")] != (podcontract.PortRange{First: 24009, Count: 3}) {
		t.Fatalf("allocation after release = %v, %v", got, err)
	}

	// Once the cache shows a pod, its live range counts and the pending entry goes;
	// a pod already live keeps its range.
	live[key("a-ps-0")] = podcontract.PortRange{First: 24003, Count: 3}
	got, err = a.allocate(live, []types.NamespacedName{key("a-ps-0")}, 3)
	if err != nil || got[key("a-ps-0")] != (podcontract.PortRange{First: 24003, Count: 3}) {
		t.Fatalf("live pod's range = %v, %v", got, err)
	}
	if _, pending := a.pending[key("a-ps-0")]; pending {
		t.Error("a live pod is still pending")
	}
}
