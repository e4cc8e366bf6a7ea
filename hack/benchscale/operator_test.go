package main

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPUTicks(t *testing.T) {
	// The command name holds a space and a parenthesis.
	stat := "4242 (my op) (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 37 0 0 20 0 12 0 100 123456 789 18446744073709551615\n"
	got, err := parseStatCPUTicks([]byte(stat))
	if err != nil || got != 287 {
		t.Errorf("got %d, %v; want 287", got, err)
	}
	comm, ppid, ok := parseStatCommPPID([]byte(stat))
	if !ok || comm != "my op) (x)" || ppid != 1 {
		t.Errorf("comm, ppid = %q, %d, %v", comm, ppid, ok)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 eleven 12"} {
		if _, err := parseStatCPUTicks([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\tpaddlejob-opera\nVmPeak:\t  900000 kB\nVmHWM:\t   51234 kB\nVmRSS:\t   40000 kB\n"
	if got, err := parseStatusKB([]byte(status), "VmHWM"); err != nil || got != 51234 {
		t.Errorf("VmHWM = %d, %v", got, err)
	}
	if _, err := parseStatusKB([]byte(status), "VmSwap"); err == nil {
		t.Error("missing field: no error")
	}
	if _, err := parseStatusKB([]byte("VmHWM: lots\n"), "VmHWM"); err == nil {
		t.Error("malformed field: no error")
	}
}

func TestReadUsageSelf(t *testing.T) {
	u, err := readUsage(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if u.PeakRSS == 0 || u.CPU < 0 || u.CPU > time.Hour {
		t.Errorf("implausible usage of the test itself: %+v", u)
	}
}
