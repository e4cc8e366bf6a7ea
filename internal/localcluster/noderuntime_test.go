package localcluster

import (
	"os"
	"strings"
	"testing"
)

// TestCheckNodeRuntime: up checks --node-runtime before anything starts:
// an unknown value names the allowed ones; containerd is refused to a
// normal user, naming root and the default.
func TestCheckNodeRuntime(t *testing.T) {
	for _, ok := range []string{"", NodeRuntimeProcess} {
		if err := CheckNodeRuntime(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	err := CheckNodeRuntime("docker")
	if err == nil || !strings.Contains(err.Error(), "process, containerd") {
		t.Errorf("docker: %v, want an error naming process, containerd", err)
	}
	err = CheckNodeRuntime(NodeRuntimeContainerd)
	switch {
	case os.Geteuid() == 0 && err != nil:
		t.Errorf("containerd refused to root: %v", err)
	case os.Geteuid() != 0 && (err == nil || !strings.Contains(err.Error(), "need root")):
		t.Errorf("containerd for a normal user: %v, want a refusal naming root", err)
	}
}
