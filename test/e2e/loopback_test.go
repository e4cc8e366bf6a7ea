package e2e

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// Every port of the local cluster — etcd, the API server, the webhook, the
// kubelet API, the progress endpoint... — listens on the loopback only: from
// the machine's other addresses, nothing answers.
func TestClusterListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	var external []net.IP
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			external = append(external, ipn.IP)
		}
	}
	if len(external) == 0 {
		t.Fatal("this machine has no non-loopback IPv4 address to try")
	}
	for _, port := range cluster.Ports.All() {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err != nil {
			t.Errorf("port %d does not answer on 127.0.0.1: %v", port, err)
		} else {
			c.Close()
		}
		for _, ip := range external {
			if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)), time.Second); err == nil {
				c.Close()
				t.Errorf("port %d answers on %s", port, ip)
			}
		}
	}
}
