package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The command refuses an address that is not loopback before it reads any
// kubeconfig or cluster, unless told with --allow-remote.
func TestDashboardRefusesAnAddressThatIsNotLoopback(t *testing.T) {
	for _, args := range [][]string{
		{"dashboard", "--address", "0.0.0.0"},
		{"dashboard", "--address", "192.0.2.1", "--port", "0"},
	} {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(args, "--kubeconfig", "/nonexistent/kubeconfig"))
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), "is not a loopback address") || !strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("paddlejob %s: error %v, want a refusal naming --allow-remote", strings.Join(args, " "), err)
		}
		if out.Len() > 0 {
			t.Errorf("paddlejob %s printed %q", strings.Join(args, " "), out.String())
		}
	}
}
