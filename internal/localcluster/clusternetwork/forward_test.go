package clusternetwork

import (
	"errors"
	"net"
	"strconv"
	"testing"

	"github.com/go-logr/logr"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

// freeTCPPort is a port nothing listens on at ip, for now.
func freeTCPPort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestForwardersOnLoopback checks the forwarders' plumbing in the test's
// own namespace, with 127.0.0.3 standing for the node IP: each port reaches
// its own target and nothing else (forward_integration_test.go does the
// same across real namespaces).
func TestForwardersOnLoopback(t *testing.T) {
	api, etcd := testutil.ListenEcho(t, "127.0.0.1:0", "api"), testutil.ListenEcho(t, "127.0.0.1:0", "etcd")
	const nodeIP = "127.0.0.3"
	apiPort, etcdPort := freeTCPPort(t, nodeIP), freeTCPPort(t, nodeIP)
	fw, err := startForwarders(logr.Discard(), hostSockets{}, nodeIP, []Forward{
		{Port: apiPort, Target: api.Addr().String()},
		{Port: etcdPort, Target: etcd.Addr().String()},
	})
	if err != nil {
		t.Fatal(err)
	}
	for port, want := range map[int]string{apiPort: "api: hello", etcdPort: "etcd: hello"} {
		got, err := testutil.Exchange(net.JoinHostPort(nodeIP, strconv.Itoa(port)), "hello")
		if err != nil || got != want {
			t.Errorf("through port %d: %q, %v; want %q", port, got, err, want)
		}
	}
	fw.stop()
	if testutil.Listening(net.JoinHostPort(nodeIP, strconv.Itoa(apiPort))) {
		t.Errorf("port %d still listens after stop", apiPort)
	}
}

// TestForwarderTargetDown: a forward whose target does not answer resets
// the connection instead of holding it.
func TestForwarderTargetDown(t *testing.T) {
	const nodeIP = "127.0.0.3"
	port := freeTCPPort(t, nodeIP)
	fw, err := startForwarders(logr.Discard(), hostSockets{}, nodeIP, []Forward{{Port: port, Target: net.JoinHostPort("127.0.0.1", strconv.Itoa(freeTCPPort(t, "127.0.0.1")))}})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.stop()
	got, err := testutil.Exchange(net.JoinHostPort(nodeIP, strconv.Itoa(port)), "hello")
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a forward to a closed port held the connection: %v", err)
	}
	if got != "" {
		t.Fatalf("through a forward to a closed port: %q; want nothing", got)
	}
}
