package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/paddlejob/paddlejob/internal/localcluster"
)

// dialFunc dials an address, as net.Dialer.DialContext.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// egressDialer dials addresses of a local cluster's network (pod and
// cluster IPs) from the test process, which runs on the host, outside that
// network, the way the API server does: HTTP CONNECT through the node's
// egress socket. Dialed directly they would leave the machine by its
// default route.
func egressDialer(st *localcluster.State) dialFunc {
	socket := st.EgressSocket()
	return func(ctx context.Context, _, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", socket)
		if err != nil {
			return nil, err
		}
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(15 * time.Second)
		}
		_ = c.SetDeadline(deadline)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("CONNECT %s through %s: %w", addr, socket, err)
		}
		if res.StatusCode != http.StatusOK || br.Buffered() > 0 {
			c.Close()
			return nil, fmt.Errorf("CONNECT %s through %s: %s", addr, socket, res.Status)
		}
		_ = c.SetDeadline(time.Time{})
		return c, nil
	}
}

// dialTLS makes a TLS connection to addr through dial, within 10 s.
func dialTLS(dial dialFunc, addr string, cfg *tls.Config) (*tls.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}
