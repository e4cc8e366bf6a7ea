package node

import (
	"slices"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
)

// TestCorefileUsesLinkedPlugins: every directive of the cluster's Corefile
// names a plugin the cluster's CoreDNS is linked with; CoreDNS refuses to
// start on any other.
func TestCorefileUsesLinkedPlugins(t *testing.T) {
	depth := 0
	var directives []string
	for _, line := range strings.Split(corefile("10.96.0.10", "/kubeconfig"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if depth == 1 && line != "}" {
			directives = append(directives, strings.Fields(line)[0])
		}
		depth += strings.Count(line, "{") - strings.Count(line, "}")
	}
	if len(directives) == 0 || depth != 0 {
		t.Fatalf("read directives %v with braces left open %d: the test no longer reads the Corefile", directives, depth)
	}
	for _, d := range directives {
		if !slices.Contains(kubebin.ClusterDNSPlugins, d) {
			t.Errorf("the Corefile uses %q, which kubebin.ClusterDNSPlugins %v does not link", d, kubebin.ClusterDNSPlugins)
		}
	}
}
