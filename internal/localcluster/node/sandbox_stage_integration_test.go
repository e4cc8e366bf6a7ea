//go:build integration

package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/utils/ptr"
)

// The staging as the kernel and bwrap 0.8 do it: a sandbox run as an
// unprivileged host user binds sources it could not reach by their path (a
// directory inside root's 0700 one), writes a writable host path through
// its idmap as its own uid, root in the pod as the disk's root, and nothing stays staged afterwards, on this node or after a
// restart.
func TestStagedSandboxAsHostIDs(t *testing.T) {
	state := t.TempDir() // root's, 0700
	ids, err := newSandboxHostIDs(state)
	if err != nil {
		t.Fatal(err)
	}
	defer ids.stager.close()
	private := filepath.Join(state, "pod", "data")
	if err := os.MkdirAll(private, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(private, "f"), []byte("inside root's directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(state, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	bwrap, err := findBwrap("")
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []int64{NonRootSandboxUID, 0} {
		sb := sandboxSpec{
			Hostname: "h", HostsFile: hosts, HostnameFile: hosts, DropCapabilities: true,
			User: sandboxIdentity{UID: ptr.To(uid), GID: ptr.To(uid)},
			Mounts: []mount{
				{Source: private, Target: "/data", ReadOnly: true},
				{Source: shared, Target: "/shared", IDMap: true},
			},
			Argv: []string{"/bin/sh", "-c", `cat /data/f; cat /etc/hosts; echo "$(id -u)" > /shared/by-$(id -u) && echo WROTE`},
		}
		cred, err := ids.Range.credential(sb.User, "main")
		if err != nil {
			t.Fatal(err)
		}
		staged, err := ids.stager.stage(fmt.Sprint("run-", uid), &sb)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bwrap, bwrapArgs(os.DirFS("/"), sb)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
		info, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer info.Close()
		cmd.ExtraFiles = []*os.File{info} // --info-fd 3
		out, err := cmd.CombinedOutput()
		staged.remove()
		t.Logf("uid %d: %v\n%s", uid, err, out)
		if !strings.Contains(string(out), "inside root's directory") || !strings.Contains(string(out), "localhost") {
			t.Errorf("uid %d: the sandbox did not read its staged sources", uid)
		}
		if !strings.Contains(string(out), "WROTE") {
			t.Errorf("uid %d: did not write the idmapped host path", uid)
		}
		st, err := os.Stat(filepath.Join(shared, fmt.Sprint("by-", uid)))
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); int64(sys.Uid) != uid || int64(sys.Gid) != uid {
			t.Errorf("the file is %d:%d on the host, want %d:%d", sys.Uid, sys.Gid, uid, uid)
		}
	}
	if entries, _ := os.ReadDir(ids.stager.dir); len(entries) != 0 {
		t.Errorf("left staged: %v", entries)
	}
	checkRestartClearsStaging(t, state, ids, hosts, shared)
}

// checkRestartClearsStaging: a node that died left a run staged; the next
// one, of the same state directory, keeps the range and starts with an
// empty staging.
func checkRestartClearsStaging(t *testing.T, state string, ids *sandboxHostIDs, hosts, shared string) {
	t.Helper()
	leftover := sandboxSpec{HostsFile: hosts, HostnameFile: hosts, Mounts: []mount{{Source: shared, Target: "/shared", IDMap: true}}}
	if _, err := ids.stager.stage("left-over", &leftover); err != nil {
		t.Fatal(err)
	}
	again, err := newSandboxHostIDs(state)
	if err != nil {
		t.Fatal(err)
	}
	defer again.stager.close()
	if again.Range != ids.Range {
		t.Errorf("the restarted node's range %s, want %s", again.Range, ids.Range)
	}
	if entries, _ := os.ReadDir(again.stager.dir); len(entries) != 0 {
		t.Errorf("the restarted node's staging holds %v", entries)
	}
}
