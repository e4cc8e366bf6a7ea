package launcher

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// Start-up order in fleet mode: every pod's trainer connects to every pod's
// pserver in fleet.init_worker(), and Paddle 3.0 no longer waits there for
// the servers to listen (its wait_server_ready returns at once), so a trainer
// that starts before a pserver of another pod listens fails or hangs. The
// trainer is started only once every pserver accepts connections.

// dialTimeout bounds one connection attempt to a pserver.
const dialTimeout = 2 * time.Second

// serversListening returns a channel that is closed once delay has passed
// and then every server accepts TCP connections, tried every interval. It is
// never closed when ctx ends first.
func serversListening(ctx context.Context, delay time.Duration, servers []netip.AddrPort, interval time.Duration, log io.Writer) <-chan struct{} {
	ready := make(chan struct{})
	go func() {
		if !wait(ctx, delay) {
			return
		}
		for i, s := range servers {
			for announced := false; ; announced = true {
				conn, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", s.String())
				if err == nil {
					conn.Close()
					break
				}
				if !announced {
					fmt.Fprintf(log, "paddlejob launch: waiting for pserver %s to accept connections (%d of %d)\n", s, i+1, len(servers))
				}
				if !wait(ctx, interval) {
					return
				}
			}
		}
		if len(servers) > 0 {
			fmt.Fprintf(log, "paddlejob launch: all %d pservers accept connections; starting the trainer\n", len(servers))
		}
		close(ready)
	}()
	return ready
}

// wait reports whether d passed before ctx ended.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// addrPorts are the addresses with one port.
func addrPorts(addrs []netip.Addr, port int) []netip.AddrPort {
	out := make([]netip.AddrPort, len(addrs))
	for i, a := range addrs {
		out[i] = netip.AddrPortFrom(a, uint16(port))
	}
	return out
}
