//go:build integration

package podnetwork

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
)

// TestCoreDNSKeepsItsQueriesFromTheNodesNamespace runs the cluster's DNS
// server, CoreDNS (which binds with SO_REUSEPORT), in the services namespace
// on 10.96.0.10, as the node does, and a squatter in the node's namespace,
// where hostNetwork pods run, bound to 10.96.0.10:53 every way it can: each
// of 20 lookups from a pod is CoreDNS's answer, and the squatter gets none.
func TestCoreDNSKeepsItsQueriesFromTheNodesNamespace(t *testing.T) {
	dir, err := kubebin.EnsureClusterDNS(context.Background(), kubebin.Options{Dirs: []string{os.Getenv("PADDLEJOB_BINARIES")}, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	n := testNodeNetwork(t)
	pod := testPod(t, n, "10.244.0.100")
	conf := filepath.Join(t.TempDir(), "Corefile")
	corefile := ".:53 {\n bind 10.96.0.10\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.96.0.1\"\n }\n}\n"
	if err := os.WriteFile(conf, []byte(corefile), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "coredns"), "-conf", conf)
	// A child forked from a thread in a namespace starts there.
	if err := n.ServicesNamespace().Do(cmd.Start); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		a, err := lookupA(pod.Namespace(), "10.96.0.10:53")
		return err == nil && a == "10.96.0.1", nil
	}); err != nil {
		t.Fatalf("CoreDNS does not answer on 10.96.0.10: %v", err)
	}
	squatters := bindSquatters(t, n.Namespace(), "10.96.0.10:53")
	if len(squatters) == 0 {
		t.Fatal("no squatter bound with IP_FREEBIND: the test would show nothing")
	}
	for i := range 20 {
		if a, err := lookupA(pod.Namespace(), "10.96.0.10:53"); err != nil || a != "10.96.0.1" {
			t.Errorf("lookup %d: %q, %v; want CoreDNS's 10.96.0.1", i, a, err)
		}
	}
	for _, c := range squatters {
		if q := queuedBytes(t, c); q != 0 {
			t.Errorf("the squatter at %s holds %d bytes of the pod's queries", c.LocalAddr(), q)
		}
	}
}

// lookupA asks server, from ns, the A record of kubernetes.default's
// name; a reply that never comes fails after 2 s rather than hanging.
func lookupA(ns *Namespace, server string) (string, error) {
	var answer string
	err := ns.Do(func() error {
		c, err := net.Dial("udp", server)
		if err != nil {
			return err
		}
		defer c.Close()
		q := dnsmessage.Message{Header: dnsmessage.Header{ID: 7, RecursionDesired: true}, Questions: []dnsmessage.Question{{
			Name: dnsmessage.MustNewName("kubernetes.default.svc.cluster.local."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}
		b, err := q.Pack()
		if err != nil {
			return err
		}
		if _, err := c.Write(b); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 512)
		m, err := c.Read(buf)
		if err != nil {
			return err
		}
		var r dnsmessage.Message
		if err := r.Unpack(buf[:m]); err != nil {
			return err
		}
		if len(r.Answers) > 0 {
			if a, ok := r.Answers[0].Body.(*dnsmessage.AResource); ok {
				answer = net.IP(a.A[:]).String()
			}
		}
		return nil
	})
	return answer, err
}
