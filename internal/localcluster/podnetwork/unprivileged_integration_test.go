//go:build integration

package podnetwork

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"golang.org/x/sys/unix"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The unprivileged test's helper processes: the role comes in the
// environment, the commands on stdin, the answers on stdout as lines
// starting with helperPrefix (the rest of stdout is the test binary's).
const (
	helperRoleEnv   = "PODNETWORK_HELPER_ROLE"
	helperSocketEnv = "PODNETWORK_HELPER_SOCKET"
	helperPrefix    = "podnetwork-helper: "
	// nobody is the normal user the helpers run as.
	nobody = 65534
)

// testPodIPs are the helper nodes' pods, one on each of testNodes.
var testPodIPs = []string{"10.244.0.10", "10.244.16.10"}

// TestClusterNetworkAsNormalUser runs the cluster network and two nodes as
// a normal user (nobody), each in a user namespace of its own with the
// ambient capabilities a normal user's node has there (CAP_SYS_ADMIN,
// CAP_NET_ADMIN, CAP_NET_RAW), as `paddlejob up` starts them: a pod on
// each node reaches the other's across the cluster network, and the
// cluster network's HostIP. No device file is needed (a tun's
// /dev/net/tun is often the host root's alone).
func TestClusterNetworkAsNormalUser(t *testing.T) {
	dir, err := os.MkdirTemp("", "podnetwork-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The directory is nobody's: the cluster network makes its socket there.
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "cluster.sock")
	cluster := startHelper(t, "cluster", socket)
	cluster.await(t, "ready")
	nodes := []*helper{startHelper(t, "node0", socket), startHelper(t, "node1", socket)}
	for _, h := range append(nodes, cluster) {
		h.checkUnprivileged(t)
	}
	for _, n := range nodes {
		n.await(t, "ready")
	}
	for _, tc := range []struct {
		from     int
		addr     string
		wantName string
	}{
		{0, testPodIPs[1] + ":8080", "pod1"},
		{1, testPodIPs[0] + ":8080", "pod0"},
		{0, "172.18.0.1:6443", "host"},
		{1, "172.18.0.2:10250", "node0"},
	} {
		nodes[tc.from].send(t, "dial "+tc.addr)
		want := fmt.Sprintf("reply %s: hello from pod%d", tc.wantName, tc.from)
		if got := nodes[tc.from].next(t); got != want {
			t.Errorf("pod%d dialing %s: %q, want %q", tc.from, tc.addr, got, want)
		}
	}
}

// helper is a helper process of TestClusterNetworkAsNormalUser.
type helper struct {
	role  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its helperPrefix lines, closed at its end
}

// startHelper runs this test binary as nobody in a user namespace of its
// own, running TestClusterNetworkHelper as role, until the test ends.
func startHelper(t *testing.T, role, socket string) *helper {
	t.Helper()
	// The binary through /proc/self/exe: nobody may not walk go test's
	// build directory to it.
	cmd := exec.Command("/proc/self/exe", "-test.run=^TestClusterNetworkHelper$", "-test.v")
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), helperRoleEnv+"="+role, helperSocketEnv+"="+socket)
	cmd.Stderr = testWriter{t, role}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:                 &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true},
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: nobody, HostID: nobody, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: nobody, HostID: nobody, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_RAW},
		Pdeathsig:                  syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s helper: %v", role, err)
	}
	h := &helper{role: role, cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(h.lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if line, ok := strings.CutPrefix(s.Text(), helperPrefix); ok {
				h.lines <- line
			} else {
				t.Logf("%s: %s", role, s.Text())
			}
		}
	}()
	t.Cleanup(func() {
		// EOF on stdin ends a helper; it exits 0 if all went well. One
		// stuck (say, never attached) is killed.
		stdin.Close()
		stuck := time.AfterFunc(helperTimeout, func() { _ = cmd.Process.Kill() })
		defer stuck.Stop()
		for range h.lines {
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("the %s helper: %v", role, err)
		}
	})
	return h
}

// checkUnprivileged: the helper runs as nobody, in a user namespace other
// than the test's.
func (h *helper) checkUnprivileged(t *testing.T) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d\n", nobody, nobody, nobody, nobody); !strings.Contains(string(status), want) {
		t.Errorf("the %s helper's status has no %q:\n%s", h.role, want, status)
	}
	ours, err1 := os.Readlink("/proc/self/ns/user")
	its, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", h.cmd.Process.Pid))
	if err1 != nil || err2 != nil || ours == its {
		t.Errorf("the %s helper's user namespace %q (%v), the test's %q (%v): want another", h.role, its, err2, ours, err1)
	}
}

func (h *helper) send(t *testing.T, command string) {
	t.Helper()
	if _, err := io.WriteString(h.stdin, command+"\n"); err != nil {
		t.Fatalf("telling the %s helper %q: %v", h.role, command, err)
	}
}

// helperTimeout bounds a wait for a helper's answer.
const helperTimeout = 30 * time.Second

// next is the helper's next answer.
func (h *helper) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			t.Fatalf("the %s helper ended without answering", h.role)
		}
		return line
	case <-time.After(helperTimeout):
		t.Fatalf("the %s helper did not answer in %s", h.role, helperTimeout)
	}
	return ""
}

func (h *helper) await(t *testing.T, want string) {
	t.Helper()
	if got := h.next(t); got != want {
		t.Fatalf("the %s helper said %q, want %q", h.role, got, want)
	}
}

// testWriter logs a helper's stderr.
type testWriter struct {
	t    *testing.T
	role string
}

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", w.role, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestClusterNetworkHelper is a helper process of
// TestClusterNetworkAsNormalUser, started by it with helperRoleEnv set;
// run otherwise, it does nothing.
func TestClusterNetworkHelper(t *testing.T) {
	socket := os.Getenv(helperSocketEnv)
	switch role := os.Getenv(helperRoleEnv); role {
	case "":
		return
	case "cluster":
		runClusterHelper(t, socket)
	case "node0", "node1":
		runNodeHelper(t, int(role[4]-'0'), socket)
	default:
		t.Fatalf("%s %q: want cluster, node0 or node1", helperRoleEnv, role)
	}
}

func answer(format string, args ...any) { fmt.Printf(helperPrefix+format+"\n", args...) }

// runClusterHelper serves a cluster network, and an echo on HostIP:6443,
// until stdin ends.
func runClusterHelper(t *testing.T, socket string) {
	c, err := NewClusterNetwork(ClusterConfig{NodesCIDR: testNodesCIDR, ServiceCIDRs: []netip.Prefix{testServiceCIDR}, Nodes: testNodes})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- c.Serve(ln) }()
	serveEchoIn(t, c.Namespace(), "172.18.0.1:6443", "host")
	answer("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	ln.Close()
	if err := <-served; err != nil {
		t.Error(err)
	}
}

// runNodeHelper runs node i with a pod serving an echo, attached to the
// cluster network, and dials from the pod what stdin asks until it ends.
func runNodeHelper(t *testing.T, i int, socket string) {
	n, err := NewNodeNetwork(NodeConfig{
		PodCIDR: testNodes[i].PodCIDR, ClusterPodCIDR: testClusterPodCIDR,
		NodeIP: testNodes[i].IP, NodesCIDR: testNodesCIDR, ServiceCIDRs: []netip.Prefix{testServiceCIDR},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	name := fmt.Sprintf("pod%d", i)
	pod := testPod(t, n, testPodIPs[i])
	serveEchoIn(t, pod.Namespace(), testPodIPs[i]+":8080", name)
	serveEchoIn(t, n.Namespace(), testNodes[i].IP.String()+":10250", fmt.Sprintf("node%d", i))

	attached := make(chan struct{}, 1)
	log := funcr.New(func(prefix, args string) {
		if strings.Contains(args, "attached to the cluster network") {
			select {
			case attached <- struct{}{}:
			default:
			}
		}
		fmt.Fprintln(os.Stderr, prefix, args)
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		AttachNode(ctx, socket, testNodes[i].IP, n.Uplink(), log)
	}()
	defer func() { cancel(); <-done }()
	<-attached
	answer("ready")

	commands := bufio.NewScanner(os.Stdin)
	for commands.Scan() {
		addr, ok := strings.CutPrefix(commands.Text(), "dial ")
		if !ok {
			t.Fatalf("command %q: want dial ADDR", commands.Text())
		}
		got, err := testutil.ExchangeWith(pod.Namespace().DialContext, addr, "hello from "+name)
		if err != nil {
			answer("error %v", err)
		} else {
			answer("reply %s", got)
		}
	}
}
