package clusternetwork

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
)

// The API server's egress into the cluster network. kube-apiserver runs on
// the host, outside the pods' network, yet dials into it: the kubelet API
// (logs, exec, port-forward), pods and Services through its proxy
// subresources, webhooks and aggregated APIs behind Services. Its egress
// selector sends that traffic (the `cluster` egress) as HTTP CONNECT
// requests to a Unix socket the node serves in the cluster's hidden home;
// the node dials each requested address inside its network namespace. It
// dials only addresses of the cluster network — the pod network, the
// Service network, the node's own IP — and refuses anything else with 403
// and the reason, so the API server cannot be turned into a way from the
// cluster network to the rest of the machine or beyond.

// egressPolicy is which addresses the egress dials: IP literals in one of
// its networks, with a port.
type egressPolicy struct {
	networks []egressNetwork
}

// egressNetwork is a range the egress dials, named for the messages.
type egressNetwork struct {
	name   string
	prefix netip.Prefix
}

// newEgressPolicy allows the pod network, the Service networks and the
// nodes' IPs.
func newEgressPolicy(podNetwork netip.Prefix, serviceNetworks []netip.Prefix, nodeIPs ...netip.Addr) egressPolicy {
	p := egressPolicy{networks: []egressNetwork{{name: "pod network", prefix: podNetwork.Masked()}}}
	for _, s := range serviceNetworks {
		p.networks = append(p.networks, egressNetwork{name: "Service network", prefix: s.Masked()})
	}
	for _, ip := range nodeIPs {
		ip = ip.Unmap()
		p.networks = append(p.networks, egressNetwork{name: "node IP", prefix: netip.PrefixFrom(ip, ip.BitLen())})
	}
	return p
}

// check returns the address target (host:port, as a CONNECT request names
// it) if the egress may dial it, else why not.
func (p egressPolicy) check(target string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q is not host:port", target)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		// Resolving a name here would let whoever controls the name choose
		// the address; the API server dials nodes, Services and pods by IP.
		return netip.AddrPort{}, fmt.Errorf("%s is a name, not an IP address: the cluster egress dials only addresses of %s", host, p)
	}
	if addr.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%s has a zone: the cluster egress dials only addresses of %s", host, p)
	}
	addr = addr.Unmap()
	ap, err := netip.ParseAddrPort(net.JoinHostPort(addr.String(), port))
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("%q: port %q is not 1-65535", target, port)
	}
	for _, n := range p.networks {
		if n.prefix.Contains(addr) {
			return ap, nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("%s is outside the cluster network: the cluster egress dials only addresses of %s", addr, p)
}

// String lists the networks, e.g. "the pod network 10.244.0.0/16, the
// Service network 10.96.0.0/16 and the node IP 172.18.0.2".
func (p egressPolicy) String() string {
	parts := make([]string, len(p.networks))
	for i, n := range p.networks {
		what := n.prefix.String()
		if n.prefix.IsSingleIP() {
			what = n.prefix.Addr().String()
		}
		parts[i] = "the " + n.name + " " + what
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// Timeouts of the egress: reading a request (the API server sends it at
// once) and dialing inside the node's network namespace (an address nothing
// answers at, such as an unassigned pod IP, fails at once with no route or a
// refusal; a pod that does not answer must not hold the API server's
// request forever).
const (
	egressRequestTimeout = 10 * time.Second
	egressDialTimeout    = 10 * time.Second
)

// egressServer serves the API server's HTTP CONNECT requests on a Unix
// socket and dials them inside the node's network namespace.
type egressServer struct {
	log    logr.Logger
	ns     netnsSockets
	policy egressPolicy
	// hostTargets are addresses of the node's network served on the
	// host instead, by the loopback address each leads to: the kubelet
	// API, which no pod may reach.
	hostTargets map[netip.AddrPort]string
	ln          net.Listener
	path        string
	conns       *connSet
	wg          sync.WaitGroup
}

// startEgress listens on the Unix socket path (replacing a stale socket
// left by an earlier node) and serves until stop.
func startEgress(log logr.Logger, ns netnsSockets, policy egressPolicy, hostTargets map[netip.AddrPort]string, path string) (*egressServer, error) {
	ln, err := listenUnix(path, "egress")
	if err != nil {
		return nil, err
	}
	e := &egressServer{log: log, ns: ns, policy: policy, hostTargets: hostTargets, ln: ln, path: path, conns: newConnSet()}
	e.wg.Add(1)
	go e.serve()
	return e, nil
}

func (e *egressServer) serve() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			e.log.Error(err, "Accepting an egress connection", "socket", e.path)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.handle(c)
		}()
	}
}

// handle answers one CONNECT request and, once the target answers, joins
// the two connections.
func (e *egressServer) handle(client net.Conn) {
	if !e.conns.add(client) {
		return
	}
	defer e.conns.remove(client)
	_ = client.SetReadDeadline(time.Now().Add(egressRequestTimeout))
	br := bufio.NewReader(client)
	req, err := http.ReadRequest(br)
	if err != nil {
		e.refuse(client, http.StatusBadRequest, "", fmt.Errorf("reading the request: %w", err))
		return
	}
	if req.Method != http.MethodConnect {
		e.refuse(client, http.StatusMethodNotAllowed, req.RequestURI, fmt.Errorf("method %s: the cluster egress serves CONNECT only", req.Method))
		return
	}
	target, err := e.policy.check(req.RequestURI)
	if err != nil {
		e.refuse(client, http.StatusForbidden, req.RequestURI, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), egressDialTimeout)
	backend, err := e.dial(ctx, target)
	cancel()
	if err != nil {
		e.refuse(client, http.StatusBadGateway, req.RequestURI, err)
		return
	}
	if !e.conns.add(backend) {
		return
	}
	defer e.conns.remove(backend)
	_ = client.SetReadDeadline(time.Time{})
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		backend.Close()
		client.Close()
		return
	}
	// Bytes the client sent right behind its request belong to the target.
	if n := br.Buffered(); n > 0 {
		early, _ := br.Peek(n)
		if _, err := backend.Write(early); err != nil {
			backend.Close()
			client.Close()
			return
		}
	}
	e.log.V(1).Info("Egress connected", "target", target.String())
	serviceproxy.Pipe(client, backend)
}

// dial connects to target: on the host when it is one of hostTargets, else
// inside the node's network namespace.
func (e *egressServer) dial(ctx context.Context, target netip.AddrPort) (net.Conn, error) {
	if host, ok := e.hostTargets[target]; ok {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
		if err != nil {
			return nil, fmt.Errorf("dialing %s (%s on the host): %w", target, host, err)
		}
		return c, nil
	}
	c, err := e.ns.DialContext(ctx, "tcp", target.String())
	if err != nil {
		return nil, fmt.Errorf("dialing %s in the node's network namespace: %w", target, err)
	}
	return c, nil
}

// refuse answers with code and closes. The reason is the status line's
// reason phrase as well as the body: the API server's error quotes the
// status line, so the reason reaches whoever asked it (kubectl logs, a
// webhook's caller).
func (e *egressServer) refuse(c net.Conn, code int, target string, reason error) {
	defer c.Close()
	e.log.Info("Egress refused", "target", target, "code", code, "reason", reason.Error())
	msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(reason.Error())
	_ = c.SetWriteDeadline(time.Now().Add(egressRequestTimeout))
	fmt.Fprintf(c, "HTTP/1.1 %d %s: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), msg, len(msg)+1, msg)
}

// stop closes the socket and every connection, and waits for them.
func (e *egressServer) stop() {
	e.ln.Close() // removes the socket file
	e.conns.closeAll()
	e.wg.Wait()
}
