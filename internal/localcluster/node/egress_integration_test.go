//go:build integration

package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

// exchangeIn connects to addr from inside ns, sends msg, half-closes and
// reads the reply to EOF.
func exchangeIn(ns *podnetwork.Namespace, addr, msg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ns.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(c)
	return string(reply), err
}

// serveNamed answers every connection ln accepts with name and what it
// read.
func serveNamed(t *testing.T, ln net.Listener, name string) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				msg, _ := io.ReadAll(c)
				fmt.Fprintf(c, "%s got %s", name, msg)
			}()
		}
	}()
}

// TestPodNetworkReachesHostOnlyThroughForwards builds a real node network
// (podnetwork) with one pod, forwards two host loopback servers to the node
// IP and serves the egress: the pod reaches exactly the forwarded servers,
// and the API server's side of the egress reaches the pod, a cluster IP
// and the node, and nothing of the host.
func TestPodNetworkReachesHostOnlyThroughForwards(t *testing.T) {
	podCIDR, serviceCIDR := netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("10.96.0.0/16")
	nodeIP := netip.MustParseAddr("172.18.0.2")
	network, err := podnetwork.NewNodeNetwork(podnetwork.NodeConfig{PodCIDR: podCIDR, NodeIP: nodeIP, ServiceCIDRs: []netip.Prefix{serviceCIDR}})
	if err != nil {
		t.Fatalf("creating the node network (the test needs root or a user namespace's root): %v", err)
	}
	defer network.Close()
	pod, err := network.AddPod(netip.MustParseAddr("10.244.0.100"))
	if err != nil {
		t.Fatal(err)
	}
	defer pod.Close()

	// The host's loopback servers: two forwarded, one not.
	host := map[string]net.Listener{}
	for _, name := range []string{"api", "etcd", "private"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		serveNamed(t, ln, name)
		host[name] = ln
	}
	port := func(name string) int { return host[name].Addr().(*net.TCPAddr).Port }
	fw, err := startForwarders(logr.Discard(), network.Namespace(), nodeIP.String(), []Forward{
		{Port: port("api"), Target: host["api"].Addr().String()},
		{Port: port("etcd"), Target: host["etcd"].Addr().String()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.stop()

	// A pod's server and a Service's listener (as the service proxy's) in
	// the node's namespace.
	podLn, err := pod.Namespace().Listen("tcp", "10.244.0.100:8080")
	if err != nil {
		t.Fatal(err)
	}
	serveNamed(t, podLn, "pod")
	svcLn, err := network.Namespace().Listen("tcp", "10.96.0.10:80")
	if err != nil {
		t.Fatal(err)
	}
	serveNamed(t, svcLn, "service")

	onNode := func(p int) string { return net.JoinHostPort(nodeIP.String(), strconv.Itoa(p)) }
	t.Run("pod reaches the forwards", func(t *testing.T) {
		for _, name := range []string{"api", "etcd"} {
			got, err := exchangeIn(pod.Namespace(), onNode(port(name)), "hello")
			if want := name + " got hello"; err != nil || got != want {
				t.Errorf("pod -> %s: %q, %v; want %q", onNode(port(name)), got, err, want)
			}
		}
	})
	t.Run("pod reaches nothing else of the host", func(t *testing.T) {
		for _, addr := range []string{
			onNode(port("private")),         // not forwarded
			host["private"].Addr().String(), // the host's loopback: the pod's own
			host["api"].Addr().String(),     // a forwarded server, at its own address
			// The node namespace's bridge address: forwards listen on the
			// node IP only.
			net.JoinHostPort(podnetwork.Gateway(podCIDR).String(), strconv.Itoa(port("api"))),
		} {
			got, err := exchangeIn(pod.Namespace(), addr, "hello")
			if err == nil {
				t.Errorf("pod -> %s: %q; want no connection", addr, got)
			} else if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("pod -> %s: %v; want the connection refused", addr, err)
			}
		}
	})

	socket := shortTempDir(t) + "/egress.sock"
	e, err := startEgress(logr.Discard(), network.Namespace(), newEgressPolicy(podCIDR, []netip.Prefix{serviceCIDR}, nodeIP), socket)
	if err != nil {
		t.Fatal(err)
	}
	defer e.stop()
	t.Run("egress reaches the cluster network", func(t *testing.T) {
		for target, want := range map[string]string{
			"10.244.0.100:8080":  "pod got ping",
			"10.96.0.10:80":      "service got ping",
			onNode(port("etcd")): "etcd got ping", // the node's own forward
		} {
			res, c, br := connectThrough(t, socket, target)
			if res.StatusCode != http.StatusOK {
				t.Errorf("CONNECT %s: %s; want 200", target, res.Status)
				continue
			}
			io.WriteString(c, "ping")
			c.(*net.UnixConn).CloseWrite()
			got, err := io.ReadAll(br)
			if err != nil || string(got) != want {
				t.Errorf("through CONNECT %s: %q, %v; want %q", target, got, err, want)
			}
		}
	})
	t.Run("egress reaches nothing else", func(t *testing.T) {
		for target, want := range map[string]struct {
			code   int
			reason string
		}{
			host["private"].Addr().String():              {http.StatusForbidden, "outside the cluster network"},
			host["api"].Addr().String():                  {http.StatusForbidden, "outside the cluster network"},
			"localhost:" + strconv.Itoa(port("private")): {http.StatusForbidden, "is a name"},
			// Allowed, but nothing is there: the node namespace dials it
			// and has nowhere to send it.
			"10.244.0.100:8081": {http.StatusBadGateway, "connection refused"},
			"10.96.0.10:81":     {http.StatusBadGateway, "connection refused"},
		} {
			res, _, _ := connectThrough(t, socket, target)
			if res.StatusCode != want.code || !strings.Contains(res.Status, want.reason) {
				t.Errorf("CONNECT %s: %q; want %d saying %q", target, res.Status, want.code, want.reason)
			}
		}
	})
}
