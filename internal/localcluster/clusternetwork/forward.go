package clusternetwork

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
)

// Forwarders: what pods reach of the machine. Pods live in network
// namespaces that do not route to the host, so the few host endpoints they
// need — the API server, the elastic etcd guard, the operator's progress
// endpoint, all on the host's loopback — are brought to them: the node
// listens on a port of its own IP, inside its network namespace, and joins
// every connection to one fixed loopback address of the host. A forwarder's
// target is set when it is made; nothing a pod sends chooses where a
// connection goes, so the list of forwards is all a pod can reach of the
// host.

// Forward is one forwarder: NodeIP:Port, inside the node's network
// namespace, forwarded to Target, a loopback address of the host.
type Forward struct {
	Port   int
	Target string // IP:port, the IP a loopback one
	// NamesClient: each connection to Target begins with a PROXY protocol
	// (version 1) line naming the client's address, for a target that
	// tells pods apart (the elastic etcd guard): the forward's own
	// connection comes from the host.
	NamesClient bool
}

func (f Forward) String() string { return strconv.Itoa(f.Port) + "=" + f.Target }

// ParseForward reads a forward as the node's --forward flag takes it,
// PORT=TARGET (e.g. 6443=127.0.0.1:6443).
func ParseForward(s string) (Forward, error) {
	port, target, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return Forward{}, fmt.Errorf("forward %q: want PORT=127.0.0.1:PORT (a port of the node IP and the loopback address it forwards to)", s)
	}
	p, err := strconv.Atoi(strings.TrimSpace(port))
	if err != nil {
		return Forward{}, fmt.Errorf("forward %q: port %q is not a number", s, port)
	}
	f := Forward{Port: p, Target: strings.TrimSpace(target)}
	return f, f.validate()
}

// validate checks the port and that the target is a loopback address of
// this machine: a forwarder never leads pods anywhere else.
func (f Forward) validate() error {
	if f.Port < 1 || f.Port > 65535 {
		return fmt.Errorf("forward %s: port %d is not 1-65535", f, f.Port)
	}
	target, err := netip.ParseAddrPort(f.Target)
	if err != nil {
		return fmt.Errorf("forward %s: target %q is not IP:port: %w", f, f.Target, err)
	}
	if !target.Addr().Unmap().IsLoopback() || target.Addr().Zone() != "" {
		return fmt.Errorf("forward %s: target %s is not a loopback address: forwarders lead pods only to this machine's own endpoints", f, target.Addr())
	}
	if target.Port() == 0 {
		return fmt.Errorf("forward %s: target port 0", f)
	}
	return nil
}

// checkForwards checks every forward, and that no two share a port.
func checkForwards(forwards []Forward) error {
	seen := map[int]bool{}
	for _, f := range forwards {
		if err := f.validate(); err != nil {
			return err
		}
		if seen[f.Port] {
			return fmt.Errorf("forward %s: port %d is forwarded twice", f, f.Port)
		}
		seen[f.Port] = true
	}
	return nil
}

// netnsSockets opens sockets inside a network namespace (the node's,
// podnetwork.Namespace).
type netnsSockets interface {
	Listen(network, address string) (net.Listener, error)
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// forwardDialTimeout bounds a forwarder's dial of its target, a loopback
// address: it answers at once or not at all.
const forwardDialTimeout = 5 * time.Second

// forwarders are the node's forwarders while they run.
type forwarders struct {
	log   logr.Logger
	lns   []net.Listener
	conns *connSet
	wg    sync.WaitGroup
}

// startForwarders listens, inside ns, on nodeIP and each forward's port, and
// serves until stop. The listeners are open when it returns.
func startForwarders(log logr.Logger, ns netnsSockets, nodeIP string, forwards []Forward) (*forwarders, error) {
	fw := &forwarders{log: log, conns: newConnSet()}
	for _, f := range forwards {
		addr := net.JoinHostPort(nodeIP, strconv.Itoa(f.Port))
		ln, err := ns.Listen("tcp", addr)
		if err != nil {
			fw.stop()
			return nil, fmt.Errorf("forward %s: listening on %s in the node's network namespace: %w", f, addr, err)
		}
		fw.lns = append(fw.lns, ln)
		fw.wg.Add(1)
		go fw.serve(ln, f)
	}
	return fw, nil
}

// serve joins every connection ln accepts to f's target.
func (fw *forwarders) serve(ln net.Listener, f Forward) {
	defer fw.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: wait a little.
			fw.log.Error(err, "Accepting a forwarded connection", "address", ln.Addr().String())
			time.Sleep(50 * time.Millisecond)
			continue
		}
		fw.wg.Add(1)
		go func() {
			defer fw.wg.Done()
			fw.forward(c, f)
		}()
	}
}

// forward joins client to f's target. The dial runs on an ordinary thread
// of the node, which is in the host's network namespace: target is the
// host's.
func (fw *forwarders) forward(client net.Conn, f Forward) {
	if !fw.conns.add(client) {
		return
	}
	defer fw.conns.remove(client)
	target := f.Target
	backend, err := net.DialTimeout("tcp", target, forwardDialTimeout)
	if err != nil {
		fw.log.V(1).Info("Forwarded connection dropped", "address", client.LocalAddr().String(), "client", client.RemoteAddr().String(), "target", target, "reason", err.Error())
		resetClose(client)
		return
	}
	if !fw.conns.add(backend) {
		return
	}
	defer fw.conns.remove(backend)
	if f.NamesClient {
		if _, err := io.WriteString(backend, proxyHeader(client.RemoteAddr(), client.LocalAddr())); err != nil {
			resetClose(client)
			return
		}
	}
	serviceproxy.Pipe(client, backend)
}

// proxyHeader is the PROXY protocol v1 line saying that a connection came
// from client to server: "PROXY TCP4 10.244.0.100 172.18.0.1 51000 40002".
func proxyHeader(client, server net.Addr) string {
	c, _ := netip.ParseAddrPort(client.String())
	s, _ := netip.ParseAddrPort(server.String())
	family := "TCP4"
	if !c.Addr().Unmap().Is4() {
		family = "TCP6"
	}
	return fmt.Sprintf("PROXY %s %s %s %d %d\r\n", family, c.Addr().Unmap(), s.Addr().Unmap(), c.Port(), s.Port())
}

// stop closes the listeners and every forwarded connection, and waits for
// their goroutines.
func (fw *forwarders) stop() {
	for _, ln := range fw.lns {
		ln.Close()
	}
	fw.conns.closeAll()
	fw.wg.Wait()
}

// connSet tracks open connections so that stopping closes them.
type connSet struct {
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	stopped bool
}

func newConnSet() *connSet { return &connSet{conns: map[net.Conn]struct{}{}} }

// add records c; once the set is closed it closes c and returns false.
func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for c := range s.conns {
		c.Close()
	}
}

// resetClose closes a TCP connection with a reset, which tells the client
// at once that nothing answers behind the port.
func resetClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
