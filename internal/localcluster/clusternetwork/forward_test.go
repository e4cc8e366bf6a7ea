package clusternetwork

import (
	"errors"
	"io"
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

// TestForwarderNamesItsClient: a forward naming its client begins the
// target's connection with a PROXY line holding the client's address, the
// one it dialed from, before the client's bytes.
func TestForwarderNamesItsClient(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	received := make(chan string, 1)
	go func() {
		c, err := target.Accept()
		if err != nil {
			received <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		received <- string(b)
	}()
	const nodeIP = "127.0.0.3"
	port := freeTCPPort(t, nodeIP)
	fw, err := startForwarders(logr.Discard(), hostSockets{}, nodeIP, []Forward{{Port: port, Target: target.Addr().String(), NamesClient: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.stop()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.7")}}
	c, err := d.Dial("tcp", net.JoinHostPort(nodeIP, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	client := c.LocalAddr().(*net.TCPAddr)
	_, _ = io.WriteString(c, "hello")
	_ = c.(*net.TCPConn).CloseWrite()
	want := "PROXY TCP4 127.0.0.7 127.0.0.3 " + strconv.Itoa(client.Port) + " " + strconv.Itoa(port) + "\r\nhello"
	if got := <-received; got != want {
		t.Errorf("the target received %q, want %q", got, want)
	}
	c.Close()
}
