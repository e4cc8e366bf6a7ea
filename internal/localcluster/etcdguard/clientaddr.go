package etcdguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
)

// The guard listens on the host's loopback; pods reach it through the
// cluster network's forward, whose connection comes from the host. The
// forward tells the guard whom it forwards: it begins each connection with
// a PROXY protocol (version 1) line naming the client's address, "PROXY TCP4
// <client> <forward's address> <client port> <forward's port>\r\n", before
// any byte of the client's. A connection that begins otherwise was made on
// the host, not through the forward, and is the host's (hostScope).

// proxyHeaderMax is the longest PROXY protocol v1 line, CRLF included.
const proxyHeaderMax = 107

// clientHeaderTimeout bounds the wait for a connection's first bytes.
const clientHeaderTimeout = 10 * time.Second

// parseProxyHeader reads the client's address from a PROXY v1 line.
func parseProxyHeader(line string) (netip.Addr, error) {
	fields := strings.Fields(strings.TrimSuffix(line, "\r\n"))
	if len(fields) != 6 || fields[0] != "PROXY" || (fields[1] != "TCP4" && fields[1] != "TCP6") {
		return netip.Addr{}, fmt.Errorf("PROXY header %q: want PROXY TCP4 CLIENT SERVER CLIENT-PORT SERVER-PORT", line)
	}
	ip, err := netip.ParseAddr(fields[2])
	if err != nil {
		return netip.Addr{}, fmt.Errorf("PROXY header %q: client address: %w", line, err)
	}
	return ip, nil
}

// caller is the AuthInfo of a connection: where it came from.
type caller struct {
	credentials.CommonAuthInfo
	// forwarded: the connection came through the forward, from client.
	forwarded bool
	client    netip.Addr
}

func (caller) AuthType() string { return "paddlejob-forwarded-client" }

// clientAddressCredentials read the forward's PROXY line, if any, at the
// start of each connection; they add no security of their own (the
// connection is plain, as etcd's clients expect it).
type clientAddressCredentials struct{}

func (clientAddressCredentials) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	_ = conn.SetReadDeadline(time.Now().Add(clientHeaderTimeout))
	defer conn.SetReadDeadline(time.Time{})
	r := bufio.NewReaderSize(conn, proxyHeaderMax+1)
	info := caller{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}
	start, err := r.Peek(6)
	if err != nil {
		return nil, nil, fmt.Errorf("reading a connection's first bytes: %w", err)
	}
	if string(start) == "PROXY " {
		line, err := r.ReadSlice('\n')
		if err != nil || len(line) > proxyHeaderMax {
			return nil, nil, errors.New("a PROXY header longer than 107 bytes or unterminated")
		}
		if info.client, err = parseProxyHeader(string(line)); err != nil {
			return nil, nil, err
		}
		info.forwarded = true
	}
	return &bufferedConn{Conn: conn, r: r}, info, nil
}

func (clientAddressCredentials) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("etcdguard: the client address credentials are a server's")
}

func (clientAddressCredentials) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "insecure"}
}

func (c clientAddressCredentials) Clone() credentials.TransportCredentials { return c }

func (clientAddressCredentials) OverrideServerName(string) error { return nil }

// bufferedConn reads what its reader holds before the connection's next
// bytes.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
