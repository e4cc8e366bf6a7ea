package node

import (
	"fmt"
	"strings"
	"testing"
)

// testRange parses "FIRST-LAST" (tests only: the node's range is its pod
// CIDR).
func testRange(s string) (ipRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return ipRange{}, fmt.Errorf("%q: want FIRST-LAST", s)
	}
	first, err := parseIPv4(lo)
	if err != nil {
		return ipRange{}, err
	}
	last, err := parseIPv4(hi)
	return ipRange{first: first, last: last}, err
}

func TestParsePodCIDR(t *testing.T) {
	tests := []struct {
		in           string
		want         string
		size, usable uint64
		wantErr      bool
	}{
		{DefaultPodCIDR, "10.244.0.0-10.244.255.255", 256 * 256, 256 * 155, false},
		{" 10.0.0.7/24 ", "10.0.0.0-10.0.0.255", 256, 155, false},
		{"10.0.0.128/25", "10.0.0.128-10.0.0.255", 128, 127, false},
		{"10.0.0.0/26", "10.0.0.0-10.0.0.63", 64, 0, false},
		{"10.0.0.150/32", "10.0.0.150-10.0.0.150", 1, 1, false},
		{"0.0.0.0/0", "0.0.0.0-255.255.255.255", 1 << 32, (1 << 24) * 155, false},
		{"10.0.0.1", "", 0, 0, true},
		{"fd00::/64", "", 0, 0, true},
		{"10.0.0.0-10.0.0.9", "", 0, 0, true},
	}
	for _, tc := range tests {
		_, r, err := parsePodCIDR(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parsePodCIDR(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "pod CIDR") {
				t.Errorf("parsePodCIDR(%q) error %q does not name the field", tc.in, err)
			}
			continue
		}
		if r.String() != tc.want || r.size() != tc.size || r.usable() != tc.usable {
			t.Errorf("parsePodCIDR(%q) = %s, %d addresses, %d usable; want %s, %d, %d", tc.in, r, r.size(), r.usable(), tc.want, tc.size, tc.usable)
		}
		if r.size() > 1<<20 {
			continue
		}
		// usable agrees with usableIP, address by address.
		var n uint64
		for v := uint64(r.first); v <= uint64(r.last); v++ {
			if usableIP(uint32(v)) {
				n++
			}
		}
		if n != r.usable() {
			t.Errorf("parsePodCIDR(%q): usable() = %d, counted %d", tc.in, r.usable(), n)
		}
	}
}

// TestPodIPsAreSafeForPaddle checks what PaddlePaddle's launcher relies on:
// no pod IP is a string prefix of another pod's endpoint. The gateway and
// the node IP are never handed out.
func TestPodIPsAreSafeForPaddle(t *testing.T) {
	for _, s := range []string{DefaultPodCIDR, "10.0.0.0/22"} {
		_, r, _ := parsePodCIDR(s)
		a := newIPAllocator(r, DefaultNodeIP, "10.0.0.1")
		var ips []string
		for i := range r.usable() {
			ip, err := a.allocate(fmt.Sprint(i), "")
			if err != nil {
				t.Fatalf("%s: allocation %d: %v", s, i, err)
			}
			ips = append(ips, ip)
		}
		if _, err := a.allocate("one-more", ""); err == nil {
			t.Fatalf("%s: more than %d addresses handed out", s, r.usable())
		}
		byPrefix := map[string]bool{}
		for _, ip := range ips {
			if strings.HasSuffix(ip, ".1") || ip == DefaultNodeIP {
				t.Errorf("%s: pod IP %s is the gateway or the node's", s, ip)
			}
			last := ip[strings.LastIndex(ip, ".")+1:]
			if len(last) != 3 {
				t.Errorf("%s: pod IP %s has a last octet of %d digits", s, ip, len(last))
			}
			byPrefix[ip] = true
		}
		// A prefix of "ip:port" that is another IP would end in a digit
		// before the colon: only shorter last octets could be.
		for _, ip := range ips {
			endpoint := ip + ":6170"
			for i := len(ip) - 1; i > strings.LastIndex(ip, "."); i-- {
				if byPrefix[endpoint[:i]] {
					t.Errorf("%s: pod IP %s is a prefix of %s", s, endpoint[:i], endpoint)
				}
			}
		}
	}
}

func TestIPAllocator(t *testing.T) {
	r, _ := testRange("10.244.0.1-10.244.0.103")
	a := newIPAllocator(r, "10.244.0.101") // the node's own address
	alloc := func(owner, preferred string) string {
		t.Helper()
		ip, err := a.allocate(owner, preferred)
		if err != nil {
			t.Fatalf("allocate(%s): %v", owner, err)
		}
		return ip
	}
	steps := []struct {
		do, owner, preferred, want string
	}{
		{"alloc", "a", "", "10.244.0.100"}, // .1-.99 are never handed out
		{"alloc", "a", "", "10.244.0.100"}, // same owner, same address
		{"alloc", "b", "", "10.244.0.102"}, // the reserved one is skipped
		{"alloc", "c", "", "10.244.0.103"},
		{"exhausted", "d", "", ""},
		{"release", "b", "", ""},
		{"alloc", "d", "", "10.244.0.102"},
		{"release", "a", "", ""},
		{"release", "c", "", ""},
		{"alloc", "e", "10.244.0.103", "10.244.0.103"}, // a free preferred address is kept
		{"alloc", "f", "10.244.0.102", "10.244.0.100"}, // a taken one is not
		{"alloc", "g", "10.244.0.50", ""},              // nor an unusable one: exhausted anyway
		{"alloc", "h", "10.0.0.1", ""},                 // out of range: exhausted anyway
	}
	for i, s := range steps {
		switch s.do {
		case "alloc":
			if s.want == "" {
				if ip, err := a.allocate(s.owner, s.preferred); err == nil {
					t.Fatalf("step %d: allocate(%s) = %s, want exhaustion", i, s.owner, ip)
				}
				continue
			}
			if got := alloc(s.owner, s.preferred); got != s.want {
				t.Fatalf("step %d: allocate(%s) = %s, want %s", i, s.owner, got, s.want)
			}
		case "exhausted":
			_, err := a.allocate(s.owner, "")
			if err == nil {
				t.Fatalf("step %d: allocation beyond the range succeeded", i)
			}
			// .100, .102 and .103: the node's .101 does not count.
			if !strings.Contains(err.Error(), "all 3 addresses") {
				t.Errorf("step %d: exhaustion error %q does not give the range's capacity, 3", i, err)
			}
		case "release":
			a.release(s.owner)
		}
	}
}

func TestIPAllocatorWithoutUsableAddresses(t *testing.T) {
	r, _ := testRange("10.244.0.1-10.244.0.99")
	if _, err := newIPAllocator(r).allocate("a", ""); err == nil || !strings.Contains(err.Error(), "100-254") {
		t.Errorf("a range without usable addresses: %v", err)
	}
}

func TestIPAllocatorIsNextFitAndUnique(t *testing.T) {
	r, _ := testRange("10.244.0.150-10.244.1.120")
	a := newIPAllocator(r)
	seen := map[string]bool{}
	for i := range 126 { // .150-.254, then 10.244.1.100-.120
		ip, err := a.allocate(fmt.Sprint(i), "")
		if err != nil || seen[ip] {
			t.Fatalf("allocation %d: %s, %v (duplicate %v)", i, ip, err, seen[ip])
		}
		seen[ip] = true
	}
	if !seen["10.244.0.254"] || !seen["10.244.1.100"] || seen["10.244.0.255"] || seen["10.244.1.0"] {
		t.Errorf("addresses handed out: %v", seen)
	}
	a.release("10")  // 10.244.0.160
	a.release("110") // 10.244.1.105
	// The next one goes to the first freed address after the last handed out,
	// wrapping around.
	if ip, _ := a.allocate("x", ""); ip != "10.244.0.160" {
		t.Errorf("after releasing, got %s, want 10.244.0.160", ip)
	}
	if ip, _ := a.allocate("y", ""); ip != "10.244.1.105" {
		t.Errorf("then %s, want 10.244.1.105", ip)
	}
}
