package controller

import (
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// firstFit returns the lowest range of count ports within [lo, hi] that
// overlaps none of used.
func firstFit(used []podcontract.PortRange, lo, hi, count int32) (podcontract.PortRange, bool) {
	sorted := append([]podcontract.PortRange(nil), used...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].First < sorted[j].First })
	next := lo
	for _, u := range sorted {
		if u.Last() < next {
			continue
		}
		if u.First-next >= count {
			break
		}
		next = u.Last() + 1
	}
	if next+count-1 > hi {
		return podcontract.PortRange{}, false
	}
	return podcontract.PortRange{First: next, Count: count}, true
}

// hostPortAllocator hands out port ranges to Host-intranet pods so that no two
// live pods of any job share a port, whatever nodes they land on (the node is
// unknown when the pod is created). What is in use comes from the API — the
// ranges recorded on the live Host-intranet pods — plus the ranges handed out
// whose pods the cache has not shown yet.
type hostPortAllocator struct {
	lo, hi int32

	mu      sync.Mutex
	pending map[types.NamespacedName]podcontract.PortRange
}

func newHostPortAllocator(lo, hi int32) *hostPortAllocator {
	return &hostPortAllocator{lo: lo, hi: hi, pending: map[types.NamespacedName]podcontract.PortRange{}}
}

// allocate returns a range of count ports for each pod in want, given the
// ranges the live pods hold. Pods that already appear in live keep theirs.
func (a *hostPortAllocator) allocate(live map[types.NamespacedName]podcontract.PortRange, want []types.NamespacedName, count int32) (map[types.NamespacedName]podcontract.PortRange, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	used := make([]podcontract.PortRange, 0, len(live)+len(a.pending))
	for key, r := range live {
		delete(a.pending, key) // the cache has caught up with this one
		used = append(used, r)
	}
	for _, r := range a.pending {
		used = append(used, r)
	}
	out := make(map[types.NamespacedName]podcontract.PortRange, len(want))
	var handedOut []types.NamespacedName
	for _, key := range want {
		if r, ok := live[key]; ok {
			out[key] = r
			continue
		}
		r, ok := firstFit(used, a.lo, a.hi, count)
		if !ok {
			// The caller gets no range: none of this call's may stay
			// pending, or they would be held until the operator restarts.
			for _, k := range handedOut {
				delete(a.pending, k)
			}
			return nil, fmt.Errorf("no free range of %d host ports left in %d-%d for pod %s", count, a.lo, a.hi, key.Name)
		}
		handedOut = append(handedOut, key)
		a.pending[key] = r
		used = append(used, r)
		out[key] = r
	}
	return out, nil
}

// release forgets a range whose pod was never created.
func (a *hostPortAllocator) release(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, key)
}
