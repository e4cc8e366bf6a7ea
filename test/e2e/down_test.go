package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// `paddlejob down` leaves no process of the cluster or its pods, no listening
// port and no state directory. It stops a cluster of its own, with a pod
// running, so it depends on no other test and on no test order.
func TestDownLeavesNoProcessAndNoPort(t *testing.T) {
	own := opts
	own.Home = filepath.Join(t.TempDir(), "home")
	own.GPUs, own.NodeLabels = 0, nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := localcluster.Up(ctx, own)
	if err != nil {
		t.Fatal(err)
	}
	ports := c.Ports
	ownClient, err := client.NewFromKubeconfig(c.Kubeconfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	job := testutil.MakePaddleJob("sleeper", "default").Workers(1).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sleep", "3600").Obj()
	if _, err := ownClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	if _, err := ownClient.WaitFor(ctx, "default", "sleeper", client.Running, 3*time.Minute); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(filepath.Join(binDir, "paddlejob"), "down", "--home", own.Home).CombinedOutput()
	t.Logf("paddlejob down:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if left := processesMentioning(own.Home); len(left) > 0 {
		t.Errorf("processes left after down:\n%s", strings.Join(left, "\n"))
	}
	for _, port := range ports.All() {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond); err == nil {
			c.Close()
			t.Errorf("port %d still listens after down", port)
		}
	}
	if _, err := os.Stat(own.Home); !os.IsNotExist(err) {
		t.Errorf("the state directory %s is still there", own.Home)
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
