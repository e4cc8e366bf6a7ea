package node

// The cluster's DNS server. The node runs CoreDNS, built from its Go module
// (kubebin.ClusterDNS), on the kube-dns Service address, as a cluster runs
// it behind that Service, in the node's services namespace
// (podnetwork.NodeNetwork), where no pod runs: pods resolve
// <service>.<namespace>.svc.cluster.local and, for a pod with a hostname and
// a subdomain, <hostname>.<subdomain>.<namespace>.svc.cluster.local from the
// API server's EndpointSlices, exactly as on a cluster. It is the node's
// process, not a pod: it binds the Service address itself (UDP and TCP port
// 53) and reaches the API server through the node's forwarder.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultClusterDNSIP is the kube-dns Service address of the default
// service CIDR, as kubeadm picks it (the tenth address).
const DefaultClusterDNSIP = "10.96.0.10"

// clusterDNSReadyPort is where CoreDNS's ready plugin answers, on the DNS
// address: 200 once the kubernetes plugin has synced with the API server.
const clusterDNSReadyPort = "8181"

// corefile is CoreDNS's configuration: the cluster domain and the reverse
// zones from the API server, and every other name answered NXDOMAIN at
// once — pods reach nothing outside the cluster, so no upstream is asked.
func corefile(ip, kubeconfig string) string {
	return fmt.Sprintf(`%[3]s:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %[1]s
    errors
    ready %[1]s:%[4]s
    kubernetes %[3]s in-addr.arpa ip6.arpa {
        kubeconfig %[2]s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
}
.:53 {
    bind %[1]s
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, ip, kubeconfig, clusterDomain, clusterDNSReadyPort)
}

// clusterDNSServer runs CoreDNS for as long as the node runs, starting it
// again when it exits.
type clusterDNSServer struct {
	binary, ip, kubeconfig string
	// dir holds the Corefile and CoreDNS's log.
	dir string
	// start starts a process in the services namespace.
	start func(cmd *exec.Cmd) error
	// dial dials in the services namespace.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	log  logr.Logger
}

// run runs CoreDNS until ctx ends.
func (s *clusterDNSServer) run(ctx context.Context) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	conf := filepath.Join(s.dir, "Corefile")
	if err := os.WriteFile(conf, []byte(corefile(s.ip, s.kubeconfig)), 0o600); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(s.dir, "coredns.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	go func() {
		defer logFile.Close()
		backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 30 * time.Second, Steps: 1 << 30}
		for ctx.Err() == nil {
			started := time.Now()
			err := s.runOnce(ctx, conf, logFile)
			if ctx.Err() != nil {
				return
			}
			if time.Since(started) > time.Minute {
				backoff.Duration = time.Second // it ran well: start again soon
			}
			delay := backoff.Step()
			s.log.Error(err, "The cluster DNS server exited; starting it again", "after", delay, "log", logFile.Name())
			select {
			case <-ctx.Done():
			case <-time.After(delay):
			}
		}
	}()
	return nil
}

// runOnce starts CoreDNS and waits for it to end.
func (s *clusterDNSServer) runOnce(ctx context.Context, conf string, out io.Writer) error {
	cmd := exec.CommandContext(ctx, s.binary, "-conf", conf)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	if err := s.start(cmd); err != nil {
		return fmt.Errorf("starting %s: %w", s.binary, err)
	}
	return cmd.Wait()
}

// awaitReady waits until CoreDNS has synced with the API server: pods
// started before would fail to resolve their peers.
func (s *clusterDNSServer) awaitReady(ctx context.Context, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: s.dial, DisableKeepAlives: true}}
	url := "http://" + net.JoinHostPort(s.ip, clusterDNSReadyPort) + "/ready"
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		last = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("the cluster DNS server (%s) is not ready after %s: %s (its log: %s)", s.ip, timeout, last, filepath.Join(s.dir, "coredns.log"))
	}
	return nil
}

// ClusterDNS configures the cluster DNS server a node runs.
type ClusterDNS struct {
	// Binary is CoreDNS's executable; empty runs none, and pods get no
	// cluster name server.
	Binary string
	// Kubeconfig is CoreDNS's, reaching the API server from the node's
	// network namespace (through the node's forward of it).
	Kubeconfig string
	// IP is the address it answers on, the kube-dns Service's, in the
	// service CIDR; default DefaultClusterDNSIP.
	IP string
}

// address is the server's address, "" when the node runs none.
func (c ClusterDNS) address() string {
	if c.Binary == "" {
		return ""
	}
	if c.IP == "" {
		return DefaultClusterDNSIP
	}
	return c.IP
}

// clusterDNSStartTimeout bounds the wait for CoreDNS's first sync with the
// API server when the node starts.
const clusterDNSStartTimeout = 60 * time.Second

// startClusterDNS starts the node's cluster DNS server, if it runs one,
// until ctx ends.
func (n *Node) startClusterDNS(ctx context.Context) (*clusterDNSServer, error) {
	if n.cfg.ClusterDNS.Binary == "" {
		return nil, nil
	}
	// The services namespace, out of every pod's reach: in the node's,
	// a hostNetwork pod of the node's uid could join CoreDNS's
	// SO_REUSEPORT group on the DNS address and answer lookups.
	ns := n.network.ServicesNamespace()
	s := &clusterDNSServer{
		binary: n.cfg.ClusterDNS.Binary, ip: n.cfg.ClusterDNS.address(), kubeconfig: n.cfg.ClusterDNS.Kubeconfig,
		dir:   filepath.Join(n.cfg.StateDir, "cluster-dns"),
		start: func(cmd *exec.Cmd) error { return n.provider.spawner.run(cmd, nil, ns) },
		dial:  ns.DialContext,
		log:   n.log.WithName("cluster-dns"),
	}
	return s, s.run(ctx)
}

// checkClusterDNSIP refuses a DNS address outside the service CIDRs: only
// those are local to the node's network namespace, and pods route to them.
func checkClusterDNSIP(c ClusterDNS, serviceCIDRs []netip.Prefix) error {
	a := c.address()
	if a == "" {
		return nil
	}
	ip, err := netip.ParseAddr(a)
	if err == nil {
		for _, p := range serviceCIDRs {
			if p.Contains(ip) {
				return nil
			}
		}
	}
	return fmt.Errorf("cluster DNS IP %q: want an address of the service CIDR %s, such as %s", a, prefixesString(serviceCIDRs), DefaultClusterDNSIP)
}

func prefixesString(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
