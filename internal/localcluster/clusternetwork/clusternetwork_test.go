package clusternetwork

import "testing"

// TestParseNodeRoundTrips: a node's flag reads back as written, and the
// kubelet-in-node mark (the container-runtime node's kubelet, served on its
// IP rather than the host's loopback) survives it.
func TestParseNodeRoundTrips(t *testing.T) {
	for _, s := range []string{"172.18.0.2,10.244.0.0/20,10250", "172.18.0.3,10.244.16.0/20,41234,kubelet-in-node"} {
		n, err := ParseNode(s)
		if err != nil {
			t.Fatal(err)
		}
		if n.String() != s {
			t.Errorf("%s reads back as %s", s, n)
		}
	}
	if n, _ := ParseNode("172.18.0.3,10.244.16.0/20,41234,kubelet-in-node"); !n.KubeletInNode {
		t.Error("kubelet-in-node was not read")
	}
	for _, bad := range []string{"172.18.0.3,10.244.16.0/20,41234,elsewhere", "172.18.0.3,10.244.16.0/20"} {
		if _, err := ParseNode(bad); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}
