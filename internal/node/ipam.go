package node

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"sync"
)

// ipRange is an inclusive range of IPv4 addresses.
type ipRange struct {
	first, last uint32
}

// parseIPRange parses "FIRST-LAST", e.g. "127.0.1.1-127.0.255.254".
func parseIPRange(s string) (ipRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return ipRange{}, fmt.Errorf("pod IP range %q: want FIRST-LAST", s)
	}
	first, err := parseIPv4(strings.TrimSpace(lo))
	if err != nil {
		return ipRange{}, fmt.Errorf("pod IP range %q: %w", s, err)
	}
	last, err := parseIPv4(strings.TrimSpace(hi))
	if err != nil {
		return ipRange{}, fmt.Errorf("pod IP range %q: %w", s, err)
	}
	if first > last {
		return ipRange{}, fmt.Errorf("pod IP range %q: first address is after the last", s)
	}
	return ipRange{first: first, last: last}, nil
}

func parseIPv4(s string) (uint32, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return 0, fmt.Errorf("%q is not an IPv4 address", s)
	}
	b := a.As4()
	return binary.BigEndian.Uint32(b[:]), nil
}

func formatIPv4(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

func (r ipRange) size() uint64      { return uint64(r.last) - uint64(r.first) + 1 }
func (r ipRange) String() string    { return formatIPv4(r.first) + "-" + formatIPv4(r.last) }
func (r ipRange) has(v uint32) bool { return v >= r.first && v <= r.last }

// ipAllocator hands each live pod an address of its own. It allocates next-fit
// (the address after the last one handed out) so that a released address is
// not reused at once, while peers may still know it as the old pod's.
type ipAllocator struct {
	mu       sync.Mutex
	r        ipRange
	reserved map[uint32]bool
	byOwner  map[string]uint32
	owners   map[uint32]string
	next     uint32
}

// newIPAllocator allocates from r, never handing out the reserved addresses
// (the node's own, when it falls in the range).
func newIPAllocator(r ipRange, reserved ...string) *ipAllocator {
	a := &ipAllocator{r: r, reserved: map[uint32]bool{}, byOwner: map[string]uint32{}, owners: map[uint32]string{}, next: r.first}
	for _, s := range reserved {
		if v, err := parseIPv4(s); err == nil {
			a.reserved[v] = true
		}
	}
	return a
}

// allocate returns owner's address, assigning one when it has none: preferred
// when it is in range and free (a pod keeps its address across node restarts),
// else the next free one.
func (a *ipAllocator) allocate(owner, preferred string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.byOwner[owner]; ok {
		return formatIPv4(v), nil
	}
	if v, err := parseIPv4(preferred); err == nil && a.free(v) {
		return a.assign(owner, v), nil
	}
	v := a.next
	for range a.r.size() {
		if a.free(v) {
			return a.assign(owner, v), nil
		}
		v = a.after(v)
	}
	return "", fmt.Errorf("no free pod IP in %s: all %d addresses are held by live pods", a.r, len(a.owners))
}

func (a *ipAllocator) free(v uint32) bool {
	_, taken := a.owners[v]
	return a.r.has(v) && !taken && !a.reserved[v]
}

func (a *ipAllocator) assign(owner string, v uint32) string {
	a.byOwner[owner] = v
	a.owners[v] = owner
	a.next = a.after(v)
	return formatIPv4(v)
}

func (a *ipAllocator) after(v uint32) uint32 {
	if v >= a.r.last {
		return a.r.first
	}
	return v + 1
}

// release frees owner's address, if it holds one.
func (a *ipAllocator) release(owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.byOwner[owner]; ok {
		delete(a.byOwner, owner)
		delete(a.owners, v)
	}
}
