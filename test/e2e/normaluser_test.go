package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The sandbox as a normal user runs it: the suite runs as root, so the test
// creates an ordinary user account, starts a local cluster as that user and
// runs TestSandbox's checks against it (normaluser_cluster_test.go).

// TestSandboxAsNormalUser runs the sandbox checks (checkSandbox) on a local
// cluster that `paddlejob up` started as an ordinary user, in a cgroup
// delegated to that user as an administrator would delegate one.
func TestSandboxAsNormalUser(t *testing.T) {
	t.Parallel()
	u := newNormalUser(t)
	checkSandbox(t, upAsNormalUser(t, u))
}

// normalUser is an account the test created.
type normalUser struct {
	name     string
	uid, gid int
	// home is the user's home directory, which the user owns.
	home string
	// dir holds home and what the test shares with the user (root's,
	// readable by all).
	dir string
}

// newNormalUser creates a user account with a home of its own in a fresh
// temporary directory. When the test ends every process of the user is
// killed, and the account and its files are removed.
func newNormalUser(t *testing.T) *normalUser {
	t.Helper()
	dir, err := os.MkdirTemp("", "paddlejob-e2e-user-")
	if err != nil {
		t.Fatal(err)
	}
	// MkdirTemp's 0700 would keep the user out of its own home.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u := &normalUser{name: "pje2e-" + strings.TrimPrefix(filepath.Base(dir), "paddlejob-e2e-user-"), home: filepath.Join(dir, "home"), dir: dir}
	out, err := exec.Command("useradd", "--create-home", "--home-dir", u.home, "--user-group", "--shell", "/bin/sh", u.name).CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("useradd %s: %v: %s", u.name, err, out)
	}
	t.Cleanup(func() { u.remove(t) })
	account, err := user.Lookup(u.name)
	if err != nil {
		t.Fatal(err)
	}
	u.uid, _ = strconv.Atoi(account.Uid)
	u.gid, _ = strconv.Atoi(account.Gid)
	t.Logf("created user %s (uid %d, gid %d), home %s", u.name, u.uid, u.gid, u.home)
	return u
}

// remove kills what is left of the user's processes, then deletes the
// account, its home and the shared files.
func (u *normalUser) remove(t *testing.T) {
	for _, pid := range u.processes(false) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// userdel refuses a user that owns a process, a zombie too.
	poll(t, time.Minute, "every process of "+u.name+" gone", func() (bool, string) {
		left := u.processes(true)
		return len(left) == 0, fmt.Sprintf("pids %v", left)
	})
	if out, err := exec.Command("userdel", "--remove", u.name).CombinedOutput(); err != nil {
		t.Errorf("userdel %s: %v: %s", u.name, err, out)
	}
	if err := os.RemoveAll(u.dir); err != nil {
		t.Error(err)
	}
}

// processes are the pids of the processes running as the user: real,
// effective, saved or file-system uid (a pod's processes too: their user
// namespace maps them to it). Zombies (exited, not yet reaped by init, which
// inherits the cluster's detached components) count only when withZombies.
func (u *normalUser) processes(withZombies bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		mine, zombie := false, false
		for _, line := range strings.Split(string(status), "\n") {
			switch f := strings.Fields(line); {
			case len(f) == 5 && f[0] == "Uid:":
				mine = slices.Contains(f[1:], strconv.Itoa(u.uid))
			case len(f) >= 2 && f[0] == "State:":
				zombie = f[1] == "Z" || f[1] == "X"
			}
		}
		if mine && (withZombies || !zombie) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// describeProcesses is one line per pid: its command line.
func describeProcesses(pids []int) string {
	var lines []string
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		lines = append(lines, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
	}
	return strings.Join(lines, "\n")
}

// command runs name with args as the user, with the user's environment as
// a login would give it (HOME, USER, LOGNAME, a system PATH) plus env, in
// the user's home.
func (u *normalUser) command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append([]string{"HOME=" + u.home, "USER=" + u.name, "LOGNAME=" + u.name,
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	cmd.Dir = u.home
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}}
	return cmd
}

// giveTree makes the user the owner of the tree at path (files the test
// wrote in the user's home).
func (u *normalUser) giveTree(t *testing.T, path string) {
	t.Helper()
	err := filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.uid, u.gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// killPid sends SIGKILL to the process of a pid read from a file.
func killPid(pid string) {
	if n, err := strconv.Atoi(pid); err == nil && n > 0 {
		_ = syscall.Kill(n, syscall.SIGKILL)
	}
}
