package serviceproxy

import (
	"context"
	"net"
)

// Network is where the proxy listens and dials: the node's services
// namespace, where the cluster IPs are local addresses and the pods'
// addresses are reachable over the bridge.
type Network interface {
	Listen(network, addr string) (net.Listener, error)
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// HostNetwork is the network namespace of the calling process itself; the
// unit tests proxy on its loopback addresses.
type HostNetwork struct{}

// Listen listens in the process's own network namespace.
func (HostNetwork) Listen(network, addr string) (net.Listener, error) {
	return net.Listen(network, addr)
}

// DialContext dials from the process's own network namespace.
func (HostNetwork) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
