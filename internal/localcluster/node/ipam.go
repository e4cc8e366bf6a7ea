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

// parsePodCIDR parses the pods' network, e.g. "10.244.0.0/16": its range
// is every address of it (the allocator hands out only some, usableIP).
func parsePodCIDR(s string) (netip.Prefix, ipRange, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, ipRange{}, fmt.Errorf("pod CIDR %q: want an IPv4 network such as 10.244.0.0/16", s)
	}
	p = p.Masked()
	b := p.Addr().As4()
	first := binary.BigEndian.Uint32(b[:])
	last := first | uint32(uint64(1)<<(32-p.Bits())-1)
	return p, ipRange{first: first, last: last}, nil
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

// Pods get only addresses whose last octet has three digits, 100 to 254.
// PaddlePaddle's launcher finds its own endpoints among its peers' with
// endpoint.startswith(podIP): with a three-digit last octet no pod IP is a
// prefix of another's endpoint ("10.244.0.1" would be of "10.244.0.12:6170").
// The gateway (the network's first address) and the broadcast address are
// never among them.
const (
	minLastOctet = 100
	maxLastOctet = 254
)

// usableIP reports whether the allocator may hand out v.
func usableIP(v uint32) bool {
	last := v & 0xff
	return last >= minLastOctet && last <= maxLastOctet
}

// nextUsable is the first usable address at or after v in r, and false when
// there is none.
func (r ipRange) nextUsable(v uint32) (uint32, bool) {
	for v >= r.first && v <= r.last {
		switch {
		case v&0xff < minLastOctet:
			v = v&^0xff | minLastOctet
		case v&0xff > maxLastOctet:
			if v|0xff == 0xffffffff {
				return 0, false
			}
			v = (v | 0xff) + 1 + minLastOctet
		default:
			return v, true
		}
	}
	return 0, false
}

// usable counts the addresses of r the allocator may hand out.
func (r ipRange) usable() uint64 {
	var n uint64
	for block := uint64(r.first &^ 0xff); block <= uint64(r.last); block += 256 {
		lo := max(block+minLastOctet, uint64(r.first))
		hi := min(block+maxLastOctet, uint64(r.last))
		if lo <= hi {
			n += hi - lo + 1
		}
	}
	return n
}

// ipAllocator hands each live pod an address of its own. It allocates next-fit
// (the address after the last one handed out) so that a released address is
// not reused at once, while peers may still know it as the old pod's.
type ipAllocator struct {
	mu       sync.Mutex
	r        ipRange
	reserved map[uint32]bool
	byOwner  map[string]uint32
	owners   map[uint32]string
	// held are the owners whose address was held for them (hold) and that
	// have not claimed it (allocate) yet.
	held map[string]bool
	next uint32
	// capacity is how many pods the range holds: its usable addresses but
	// the reserved ones.
	capacity uint64
}

// newIPAllocator allocates the usable addresses of r (see usableIP), never
// handing out the reserved ones (the node's own, when it falls in the range).
func newIPAllocator(r ipRange, reserved ...string) *ipAllocator {
	a := &ipAllocator{r: r, reserved: map[uint32]bool{}, byOwner: map[string]uint32{}, owners: map[uint32]string{}, held: map[string]bool{}, next: r.first}
	a.capacity = r.usable()
	for _, s := range reserved {
		if v, err := parseIPv4(s); err == nil && !a.reserved[v] {
			a.reserved[v] = true
			if r.has(v) && usableIP(v) {
				a.capacity--
			}
		}
	}
	if v, ok := r.nextUsable(r.first); ok {
		a.next = v
	}
	return a
}

// allocate returns owner's address — the one held for it after a node
// restart (hold), or one assigned now: preferred when it is in range and
// free, else the next free one.
func (a *ipAllocator) allocate(owner, preferred string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.byOwner[owner]; ok {
		delete(a.held, owner)
		return formatIPv4(v), nil
	}
	if v, err := parseIPv4(preferred); err == nil && a.free(v) {
		return a.assign(owner, v), nil
	}
	if a.capacity == 0 {
		return "", fmt.Errorf("no pod IP in %s: the range has no address whose last octet is %d-%d (other than the node's), which is all pods are given", a.r, minLastOctet, maxLastOctet)
	}
	v := a.next
	for range a.capacity + uint64(len(a.reserved)) {
		if a.free(v) {
			return a.assign(owner, v), nil
		}
		v = a.after(v)
	}
	return "", fmt.Errorf("no free pod IP in %s: all %d addresses pods can have in it are held by live pods", a.r, a.capacity)
}

func (a *ipAllocator) free(v uint32) bool {
	_, taken := a.owners[v]
	return a.r.has(v) && usableIP(v) && !taken && !a.reserved[v]
}

func (a *ipAllocator) assign(owner string, v uint32) string {
	a.byOwner[owner] = v
	a.owners[v] = owner
	a.next = a.after(v)
	return formatIPv4(v)
}

// after is the usable address after v, wrapping around to the first.
func (a *ipAllocator) after(v uint32) uint32 {
	if v < a.r.last {
		if next, ok := a.r.nextUsable(v + 1); ok {
			return next
		}
	}
	next, _ := a.r.nextUsable(a.r.first)
	return next
}

// release frees owner's address, if it holds one.
func (a *ipAllocator) release(owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(owner)
}

func (a *ipAllocator) releaseLocked(owner string) {
	if v, ok := a.byOwner[owner]; ok {
		delete(a.byOwner, owner)
		delete(a.owners, v)
	}
	delete(a.held, owner)
}

// hold keeps ip for owner, a pod the node had given it before a restart,
// until the pod claims it (allocate) or is gone (releaseHeld): no other pod
// gets it meanwhile. Next-fit goes on after it, so holding the pods' addresses
// oldest first resumes allocation after the newest pod's, as before the
// restart. It reports whether ip could be held: an address out of range or
// taken is not.
func (a *ipAllocator) hold(owner, ip string) bool {
	v, err := parseIPv4(ip)
	if err != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byOwner[owner]; ok || !a.free(v) {
		return false
	}
	a.assign(owner, v)
	a.held[owner] = true
	return true
}

// releaseHeld frees owner's address if it was held for it and never claimed.
func (a *ipAllocator) releaseHeld(owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held[owner] {
		a.releaseLocked(owner)
	}
}
