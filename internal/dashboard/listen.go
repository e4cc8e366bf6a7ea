package dashboard

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// Listen opens the dashboard's port on address (an IP or a host name) and
// port (0: any free one). It refuses an address that is not loopback unless
// allowRemote: whoever reaches the dashboard reads the cluster with the
// user's credentials, token or not, once the URL is seen.
func Listen(ctx context.Context, address string, port int, allowRemote bool) (net.Listener, error) {
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("--port %d: want 0 (any free port) to 65535", port)
	}
	if !allowRemote {
		if err := checkLoopback(ctx, address); err != nil {
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(address, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	// The name may have resolved otherwise when listening.
	if a, ok := ln.Addr().(*net.TCPAddr); !allowRemote && (!ok || !a.IP.IsLoopback()) {
		ln.Close()
		return nil, notLoopback(address, fmt.Sprintf("it is bound to %s", ln.Addr()))
	}
	return ln, nil
}

// checkLoopback accepts a loopback IP, or a host name whose every address
// is one.
func checkLoopback(ctx context.Context, address string) error {
	if address == "" {
		return notLoopback(address, "empty means every interface")
	}
	if ip := net.ParseIP(address); ip != nil {
		if ip.IsLoopback() {
			return nil
		}
		return notLoopback(address, "")
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, address)
	if err != nil {
		return fmt.Errorf("--address %s: %w", address, err)
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return notLoopback(address, "it resolves to "+a.IP.String())
		}
	}
	return nil
}

func notLoopback(address, why string) error {
	if why != "" {
		why = " (" + why + ")"
	}
	return fmt.Errorf("--address %q is not a loopback address%s: the dashboard reads the cluster with your credentials, "+
		"so it listens on 127.0.0.1 or ::1 unless --allow-remote says to serve it to other machines", address, why)
}
