package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Runs last (files in name order): `paddlejob down` leaves no process of the
// cluster or its pods and no listening port.
func TestDownLeavesNoProcessAndNoPort(t *testing.T) {
	ports := cluster.Ports
	out, err := exec.Command(filepath.Join(binDir, "paddlejob"), "down", "--home", opts.Home).CombinedOutput()
	t.Logf("paddlejob down:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	cluster = nil
	if left := processesMentioning(opts.Home, binDir); len(left) > 0 {
		t.Errorf("processes left after down:\n%s", strings.Join(left, "\n"))
	}
	for _, port := range ports.All() {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond); err == nil {
			c.Close()
			t.Errorf("port %d still listens after down", port)
		}
	}
	if _, err := os.Stat(opts.Home); !os.IsNotExist(err) {
		t.Errorf("the state directory %s is still there", opts.Home)
	}
}

// processesMentioning lists running processes whose command line or
// environment names one of the paths: the cluster's components and every pod
// process started from the test's binaries.
func processesMentioning(paths ...string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for _, p := range paths {
			if strings.Contains(string(cmd), p) || strings.Contains(string(env), p) {
				out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
				break
			}
		}
	}
	return out
}
