package clusternetwork

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestEgressPolicy(t *testing.T) {
	policy := newEgressPolicy(netip.MustParsePrefix("10.244.0.0/16"),
		[]netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}, netip.MustParseAddr("172.18.0.2"))
	tests := []struct {
		target string
		want   string // the address dialed; empty: refused
		reason string // part of the refusal
	}{
		{target: "10.244.0.100:8080", want: "10.244.0.100:8080"},
		{target: "10.244.255.254:1", want: "10.244.255.254:1"},
		{target: "10.96.0.1:443", want: "10.96.0.1:443"},
		{target: "10.96.12.7:53", want: "10.96.12.7:53"},
		{target: "172.18.0.2:10250", want: "172.18.0.2:10250"},
		{target: "[::ffff:10.244.3.101]:80", want: "10.244.3.101:80"},
		// The machine and the world are not the cluster network.
		{target: "127.0.0.1:2379", reason: "127.0.0.1 is outside the cluster network"},
		{target: "127.0.0.1:6443", reason: "outside the cluster network"},
		{target: "[::1]:6443", reason: "::1 is outside"},
		{target: "172.18.0.3:10250", reason: "172.18.0.3 is outside"},
		{target: "10.245.0.1:80", reason: "10.245.0.1 is outside"},
		{target: "10.97.0.1:443", reason: "10.97.0.1 is outside"},
		{target: "8.8.8.8:53", reason: "8.8.8.8 is outside"},
		{target: "0.0.0.0:80", reason: "0.0.0.0 is outside"},
		{target: "169.254.169.254:80", reason: "outside"},
		// Names are never resolved.
		{target: "localhost:6443", reason: "localhost is a name, not an IP address"},
		{target: "kubernetes.default.svc:443", reason: "is a name"},
		{target: "paddlejob-node:10250", reason: "is a name"},
		// Malformed.
		{target: "10.244.0.100", reason: "is not host:port"},
		{target: "10.244.0.100:0", reason: "port \"0\" is not 1-65535"},
		{target: "10.244.0.100:65536", reason: "is not 1-65535"},
		{target: "10.244.0.100:http", reason: "is not 1-65535"},
		{target: "[fe80::1%eth0]:80", reason: "has a zone"},
		{target: "", reason: "is not host:port"},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			got, err := policy.check(tc.target)
			if tc.want != "" {
				if err != nil || got.String() != tc.want {
					t.Fatalf("check(%q) = %v, %v; want %s", tc.target, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("check(%q) = %v, allowed; want refused (%s)", tc.target, got, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("check(%q) refused with %q; want it to say %q", tc.target, err, tc.reason)
			}
			// Every refusal names what the egress does reach.
			if want := "the pod network 10.244.0.0/16, the Service network 10.96.0.0/16 and the node IP 172.18.0.2"; !strings.Contains(err.Error(), want) &&
				!strings.Contains(err.Error(), "not host:port") && !strings.Contains(err.Error(), "not 1-65535") {
				t.Fatalf("refusal %q does not name the networks (%s)", err, want)
			}
		})
	}
}

func TestParseForward(t *testing.T) {
	tests := []struct {
		in     string
		want   Forward
		reason string
	}{
		{in: "6443=127.0.0.1:6443", want: Forward{Port: 6443, Target: "127.0.0.1:6443"}},
		{in: " 80 = 127.0.0.5:8080 ", want: Forward{Port: 80, Target: "127.0.0.5:8080"}},
		{in: "80=[::1]:8080", want: Forward{Port: 80, Target: "[::1]:8080"}},
		{in: "6443", reason: "want PORT=127.0.0.1:PORT"},
		{in: "x=127.0.0.1:1", reason: `port "x" is not a number`},
		{in: "0=127.0.0.1:1", reason: "port 0 is not 1-65535"},
		{in: "70000=127.0.0.1:1", reason: "is not 1-65535"},
		{in: "80=10.0.0.1:80", reason: "10.0.0.1 is not a loopback address"},
		{in: "80=0.0.0.0:80", reason: "is not a loopback address"},
		{in: "80=localhost:80", reason: "is not IP:port"},
		{in: "80=127.0.0.1", reason: "is not IP:port"},
		{in: "80=127.0.0.1:0", reason: "target port 0"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseForward(tc.in)
			if tc.reason == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseForward(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("ParseForward(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.reason)
			}
		})
	}
	if err := checkForwards([]Forward{{Port: 1, Target: "127.0.0.1:2"}, {Port: 1, Target: "127.0.0.1:3"}}); err == nil || !strings.Contains(err.Error(), "forwarded twice") {
		t.Fatalf("checkForwards with a port twice = %v; want an error saying it is forwarded twice", err)
	}
}

// hostSockets opens sockets in the test's own network namespace: the
// protocol tests below need no other (egress_integration_test.go uses real
// namespaces).
type hostSockets struct{}

func (hostSockets) Listen(network, address string) (net.Listener, error) {
	return net.Listen(network, address)
}

func (hostSockets) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// connectThrough sends a CONNECT request for target to the egress socket
// and returns the response and the connection.
func connectThrough(t *testing.T, socket, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("unix", socket, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", target)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer to CONNECT %s: %v", target, err)
	}
	return res, c, br
}

// TestEgressProtocol checks the CONNECT exchange on loopback, with a policy
// whose "pod network" is 127.0.0.2/32: an allowed target is joined, others
// are refused with the reason in the status line, other methods get 405.
func TestEgressProtocol(t *testing.T) {
	backend := testutil.ListenEcho(t, "127.0.0.2:0", "backend")
	policy := newEgressPolicy(netip.MustParsePrefix("127.0.0.2/32"), nil, netip.MustParseAddr("172.18.0.2"))
	socket := filepath.Join(shortTempDir(t), "egress.sock")
	// The node IP's kubelet port leads to the host (here the backend).
	kubelet := netip.MustParseAddrPort("172.18.0.2:10250")
	e, err := startEgress(logr.Discard(), hostSockets{}, policy, map[netip.AddrPort]string{kubelet: backend.Addr().String()}, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer e.stop()

	res, c, br := connectThrough(t, socket, backend.Addr().String())
	if res.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %s; want 200", backend.Addr(), res.Status)
	}
	io.WriteString(c, "ping")
	c.(*net.UnixConn).CloseWrite()
	reply, err := io.ReadAll(br)
	if err != nil || string(reply) != "backend: ping" {
		t.Fatalf("through the egress: %q, %v; want the backend's echo", reply, err)
	}

	res, c, br = connectThrough(t, socket, kubelet.String())
	if res.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s (a host target): %s; want 200", kubelet, res.Status)
	}
	io.WriteString(c, "logs")
	c.(*net.UnixConn).CloseWrite()
	if reply, err := io.ReadAll(br); err != nil || string(reply) != "backend: logs" {
		t.Fatalf("through the egress to a host target: %q, %v; want the backend's echo", reply, err)
	}

	res, _, _ = connectThrough(t, socket, "127.0.0.1:"+portOf(t, backend.Addr()))
	if res.StatusCode != http.StatusForbidden || !strings.Contains(res.Status, "127.0.0.1 is outside the cluster network") {
		t.Fatalf("CONNECT to 127.0.0.1: %q; want 403 saying it is outside the cluster network", res.Status)
	}
	body, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(body), "outside the cluster network") {
		t.Fatalf("refusal body %q does not give the reason", body)
	}

	// An allowed address nothing listens at: 502, with the dial's error.
	res, _, _ = connectThrough(t, socket, "127.0.0.2:1")
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(res.Status, "connection refused") {
		t.Fatalf("CONNECT to a closed port: %q; want 502 saying the connection was refused", res.Status)
	}

	c2, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", backend.Addr(), backend.Addr())
	res, err = http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil || res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET through the egress: %v, %v; want 405", res, err)
	}
}

func TestEgressSocketTooLong(t *testing.T) {
	long := filepath.Join("/tmp", strings.Repeat("d", 100), "egress.sock")
	_, err := startEgress(logr.Discard(), hostSockets{}, egressPolicy{}, nil, long)
	if err == nil || !strings.Contains(err.Error(), "more than a Unix socket's 107") {
		t.Fatalf("startEgress(%d-byte path) = %v; want an error about the length", len(long), err)
	}
}

// shortTempDir is a temporary directory whose path is short enough for a
// Unix socket (t.TempDir's are named after the test and may not be).
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "egress")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func portOf(t *testing.T, a net.Addr) string {
	t.Helper()
	_, port, err := net.SplitHostPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}
