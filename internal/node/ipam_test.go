package node

import (
	"fmt"
	"testing"
)

func TestParseIPRange(t *testing.T) {
	tests := []struct {
		in      string
		size    uint64
		wantErr bool
	}{
		{"127.0.1.1-127.0.255.254", 254*256 + 254, false},
		{"10.0.0.1-10.0.0.1", 1, false},
		{" 127.0.0.2 - 127.0.0.3 ", 2, false},
		{"127.0.0.3-127.0.0.2", 0, true},
		{"127.0.0.1", 0, true},
		{"::1-::2", 0, true},
		{"a-b", 0, true},
	}
	for _, tc := range tests {
		r, err := parseIPRange(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseIPRange(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && r.size() != tc.size {
			t.Errorf("parseIPRange(%q) has %d addresses, want %d", tc.in, r.size(), tc.size)
		}
	}
}

func TestIPAllocator(t *testing.T) {
	r, _ := parseIPRange("127.0.1.1-127.0.1.4")
	a := newIPAllocator(r, "127.0.1.2") // the node's own address
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
		{"alloc", "a", "", "127.0.1.1"},
		{"alloc", "a", "", "127.0.1.1"}, // same owner, same address
		{"alloc", "b", "", "127.0.1.3"}, // the reserved one is skipped
		{"alloc", "c", "", "127.0.1.4"},
		{"exhausted", "d", "", ""},
		{"release", "b", "", ""},
		{"alloc", "d", "", "127.0.1.3"},
		{"release", "a", "", ""},
		{"release", "c", "", ""},
		{"alloc", "e", "127.0.1.4", "127.0.1.4"}, // a free preferred address is kept
		{"alloc", "f", "127.0.1.3", "127.0.1.1"}, // a taken one is not
		{"alloc", "g", "10.0.0.1", ""},           // out of range: exhausted anyway
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
			if _, err := a.allocate(s.owner, ""); err == nil {
				t.Fatalf("step %d: allocation beyond the range succeeded", i)
			}
		case "release":
			a.release(s.owner)
		}
	}
}

func TestIPAllocatorIsNextFitAndUnique(t *testing.T) {
	r, _ := parseIPRange("127.0.1.1-127.0.1.100")
	a := newIPAllocator(r)
	seen := map[string]bool{}
	for i := range 100 {
		ip, err := a.allocate(fmt.Sprint(i), "")
		if err != nil || seen[ip] {
			t.Fatalf("allocation %d: %s, %v (duplicate %v)", i, ip, err, seen[ip])
		}
		seen[ip] = true
	}
	a.release("10")
	a.release("20")
	// The next one goes to the first freed address after the last handed out,
	// wrapping around.
	if ip, _ := a.allocate("x", ""); ip != "127.0.1.11" {
		t.Errorf("after releasing, got %s, want 127.0.1.11", ip)
	}
	if ip, _ := a.allocate("y", ""); ip != "127.0.1.21" {
		t.Errorf("then %s, want 127.0.1.21", ip)
	}
}
