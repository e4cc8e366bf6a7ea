package node

import (
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/utils/ptr"
)

// hostTree is a small merged-/usr host: /bin and /lib are symlinks, /etc has
// a few entries.
func hostTree() fstest.MapFS {
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	link := func(to string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(to), Mode: fs.ModeSymlink | 0o777}
	}
	return fstest.MapFS{
		"usr":               dir,
		"usr/bin/sh":        {Data: []byte{}, Mode: 0o755},
		"bin":               link("usr/bin"),
		"lib":               link("usr/lib"),
		"etc":               dir,
		"etc/hosts":         {Data: []byte("host")},
		"etc/hostname":      {Data: []byte("vm")},
		"etc/passwd":        {Data: []byte("root")},
		"etc/shadow":        {Data: []byte("root:x")},
		"etc/ssl/certs/ca":  {Data: []byte("ca")},
		"etc/alternatives":  link("/etc/alternatives-real"),
		"root":              dir,
		"sys":               dir,
		"tmp/build/trainer": {Data: []byte{}, Mode: 0o755},
		"data/tools/train":  {Data: []byte{}, Mode: 0o755},
	}
}

// hasArgs reports whether args holds want, in a row.
func hasArgs(args []string, want ...string) bool {
	for i := 0; i+len(want) <= len(args); i++ {
		if reflect.DeepEqual(args[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

func indexOf(args []string, want ...string) int {
	for i := 0; i+len(want) <= len(args); i++ {
		if reflect.DeepEqual(args[i:i+len(want)], want) {
			return i
		}
	}
	return -1
}

func TestBwrapArgs(t *testing.T) {
	args := bwrapArgs(hostTree(), bwrapTestSpec())

	t.Run("namespaces: own PID, UTS, IPC and cgroup, the host's network", func(t *testing.T) {
		checkSandboxNamespaces(t, args)
	})
	t.Run("system roots read-only, symlinks kept, no homes", func(t *testing.T) {
		for _, want := range [][]string{
			{"--ro-bind", "/usr", "/usr"}, {"--symlink", "usr/bin", "/bin"}, {"--symlink", "usr/lib", "/lib"}, {"--ro-bind", "/sys", "/sys"},
		} {
			if !hasArgs(args, want...) {
				t.Errorf("missing %q", want)
			}
		}
		for _, hidden := range []string{"/root", "/home", "/work", "/opt", "/etc"} {
			if hasArgs(args, "--ro-bind", hidden, hidden) || hasArgs(args, "--bind", hidden, hidden) {
				t.Errorf("%s is bound: %q", hidden, args)
			}
		}
	})
	t.Run("only the /etc entries a program needs", func(t *testing.T) {
		for _, want := range [][]string{
			{"--ro-bind", "/etc/passwd", "/etc/passwd"}, {"--ro-bind", "/etc/ssl", "/etc/ssl"},
		} {
			if !hasArgs(args, want...) {
				t.Errorf("missing %q", want)
			}
		}
		if hasArgs(args, "--ro-bind", "/etc/shadow", "/etc/shadow") || hasArgs(args, "--ro-bind", "/etc/hosts", "/etc/hosts") {
			t.Errorf("the host's /etc/shadow or /etc/hosts is bound: %q", args)
		}
	})
	t.Run("private /proc, /dev, /tmp, then the command's file alone", func(t *testing.T) {
		tmp := indexOf(args, "--tmpfs", "/tmp")
		cmd := indexOf(args, "--ro-bind", "/tmp/build/trainer", "/tmp/build/trainer")
		if indexOf(args, "--proc", "/proc") < 0 || indexOf(args, "--dev", "/dev") < 0 || tmp < 0 || cmd < tmp {
			t.Errorf("args %q", args)
		}
		if hasArgs(args, "--ro-bind", "/tmp/build", "/tmp/build") {
			t.Errorf("the command's directory is bound: %q", args)
		}
	})
	t.Run("hosts, hostname and volumes", func(t *testing.T) {
		for _, want := range [][]string{
			{"--ro-bind", "/state/pod/etc/hosts", "/etc/hosts"}, {"--ro-bind", "/state/pod/etc/hostname", "/etc/hostname"},
			{"--bind", "/state/pod/volumes/data", "/data"}, {"--ro-bind", "/state/pod/volumes/cfg", "/etc/paddlejob"},
		} {
			if !hasArgs(args, want...) {
				t.Errorf("missing %q", want)
			}
		}
		if indexOf(args, "--bind", "/state/pod/volumes/data", "/data") > indexOf(args, "--bind", "/state/pod/volumes/data/sub", "/data/sub") {
			t.Error("a nested mount is made before its parent")
		}
	})
	t.Run("working directory created, command last", func(t *testing.T) {
		if !hasArgs(args, "--dir", "/workspace") || !hasArgs(args, "--chdir", "/workspace") {
			t.Errorf("args %q", args)
		}
		if tail := args[len(args)-5:]; !reflect.DeepEqual(tail, []string{"3", "--", "/tmp/build/trainer", "--epochs", "1"}) {
			t.Errorf("args end in %q", tail)
		}
	})
}

// bwrapTestSpec is a worker's sandbox with nested volumes, a read-only
// one, and a command outside every root (its file bound alone).
func bwrapTestSpec() sandboxSpec {
	return sandboxSpec{
		Hostname: "worker-0", HostsFile: "/state/pod/etc/hosts", HostnameFile: "/state/pod/etc/hostname",
		Mounts: []mount{
			{Source: "/state/pod/volumes/data/sub", Target: "/data/sub", ReadOnly: false},
			{Source: "/state/pod/volumes/data", Target: "/data", ReadOnly: false},
			{Source: "/state/pod/volumes/cfg", Target: "/etc/paddlejob", ReadOnly: true},
			// buildProcess adds the command's file (needsCommandBind).
			{Source: "/tmp/build/trainer", Target: "/tmp/build/trainer", ReadOnly: true},
		},
		WorkingDir: "/workspace",
		Argv:       []string{"/tmp/build/trainer", "--epochs", "1"},
	}
}

// checkSandboxNamespaces checks that the sandbox has its own PID, UTS, IPC
// and cgroup namespaces and session, shares the host's network, and keeps
// the capabilities the spec does not drop.
func checkSandboxNamespaces(t *testing.T, args []string) {
	t.Helper()
	for _, want := range [][]string{{"--unshare-pid"}, {"--unshare-uts"}, {"--unshare-ipc"}, {"--unshare-cgroup-try"},
		{"--hostname", "worker-0"}, {"--die-with-parent"}, {"--new-session"}} {
		if !hasArgs(args, want...) {
			t.Errorf("missing %q in %q", want, args)
		}
	}
	for _, a := range args {
		if a == "--unshare-net" || a == "--unshare-all" {
			t.Errorf("the network must be shared: %q", args)
		}
	}
	if hasArgs(args, "--cap-drop", "ALL") {
		t.Error("capabilities dropped although the spec keeps them (a non-root node has none)")
	}
}

func TestBwrapArgsPlainCases(t *testing.T) {
	args := bwrapArgs(hostTree(), sandboxSpec{
		Hostname: "h", HostsFile: "/p/hosts", HostnameFile: "/p/hostname",
		Mounts: []mount{{Source: "/p/v", Target: "/etc/ssl", ReadOnly: true}},
		Argv:   []string{"sh", "-c", "true"},
	})
	if indexOf(args, "--ro-bind", "/p/v", "/etc/ssl") < indexOf(args, "--ro-bind", "/etc/ssl", "/etc/ssl") {
		t.Errorf("a volume over an /etc entry is mounted before the entry: %q", args)
	}
	if hasArgs(args, "--remount-ro") {
		t.Error("remount without an expanded root")
	}
	if !hasArgs(args, "--chdir", "/") || hasArgs(args, "--dir", "/") {
		t.Errorf("default working directory: %q", args)
	}
	if strings.Contains(strings.Join(args, " "), "--ro-bind /tmp") {
		t.Error("a command found on PATH needs no extra bind")
	}
}

func TestNeedsCommandBind(t *testing.T) {
	mounts := []mount{{Target: "/scripts"}}
	tests := []struct {
		command string
		want    bool
	}{
		{"/usr/bin/python3", false},
		{"/bin/sh", false},
		{"/scripts/run.sh", false},
		{"/tmp/build/trainer", true},
		{"/data/tools/train", true},
		{"/root/.cache/paddlejob/bin/examples", true},
		{"python3", false},
		{"./run.sh", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := needsCommandBind(tc.command, mounts); got != tc.want {
			t.Errorf("needsCommandBind(%q) = %v, want %v", tc.command, got, tc.want)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	if got := resolveCommand("sh", "/nonexistent:/usr/bin:/bin", nil); got != "/usr/bin/sh" && got != "/bin/sh" {
		t.Errorf("sh resolved to %q", got)
	}
	for _, name := range []string{"/abs/prog", "./rel", "no-such-command-here"} {
		if got := resolveCommand(name, "/usr/bin", nil); got != name {
			t.Errorf("resolveCommand(%q) = %q, want it unchanged", name, got)
		}
	}
}

func TestFindBwrap(t *testing.T) {
	if _, err := findBwrap("/nonexistent/bwrap"); err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("a missing --bwrap: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := findBwrap(""); err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("no bwrap on PATH: %v", err)
	}
}

// The cluster's state is hidden where a root would show it, and a root node
// drops every capability.
func TestBwrapArgsHideAndDrop(t *testing.T) {
	host := hostTree()
	host["usr/local/paddlejob/pki/ca.key"] = &fstest.MapFile{Data: []byte("key")}
	args := bwrapArgs(host, sandboxSpec{
		Hostname: "h", HostsFile: "/p/hosts", HostnameFile: "/p/hostname", Argv: []string{"sh"},
		Hidden: []string{"/usr/local/paddlejob", "/tmp/state"}, DropCapabilities: true,
	})
	if !hasArgs(args, "--cap-drop", "ALL") {
		t.Errorf("capabilities kept: %q", args)
	}
	if i := indexOf(args, "--tmpfs", "/usr/local/paddlejob"); i < 0 || i < indexOf(args, "--ro-bind", "/usr", "/usr") {
		t.Errorf("the state under /usr is not hidden after /usr is bound: %q", args)
	}
	if hasArgs(args, "--tmpfs", "/tmp/state") {
		t.Errorf("a hidden directory no root shows gets a tmpfs anyway: %q", args)
	}
}

// A sandbox's user namespace and identity, its sized /tmp and /dev/shm
// (bwrap's --size and --perms apply to the --tmpfs after them), and its
// seccomp filter, inherited after the mounts' descriptors.
func TestBwrapArgsIdentitySizesSeccomp(t *testing.T) {
	filter, err := os.CreateTemp(t.TempDir(), "filter")
	if err != nil {
		t.Fatal(err)
	}
	defer filter.Close()
	volume, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer volume.Close()
	spec := sandboxSpec{
		Hostname: "h", HostsFile: "/p/hosts", HostnameFile: "/p/hostname", Argv: []string{"sh"},
		Mounts:  []mount{{Source: volume.Name(), Target: "/data", File: volume}},
		TmpSize: 1 << 30, ShmSize: 64 << 20,
		User:    sandboxIdentity{UID: ptr.To[int64](1000), GID: ptr.To[int64](1001)},
		Seccomp: filter, BindFD: true,
	}
	args := bwrapArgs(hostTree(), spec)
	for _, want := range [][]string{
		{"--unshare-user"},
		{"--uid", "1000"}, {"--gid", "1001"},
		{"--perms", "1777", "--size", "1073741824", "--tmpfs", "/tmp"},
		{"--perms", "1777", "--size", "67108864", "--tmpfs", "/dev/shm"},
		{"--bind-fd", "4", "/data"},
		{"--seccomp", "5"},
	} {
		if !hasArgs(args, want...) {
			t.Errorf("no %q in %q", want, args)
		}
	}
	if files := sandboxFiles(spec); len(files) != 2 || files[0] != volume || files[1] != filter {
		t.Errorf("inherited descriptors %v, want the volume's then the filter's", files)
	}
	// /dev/shm is mounted over the /dev bwrap makes.
	if indexOf(args, "--tmpfs", "/dev/shm") < indexOf(args, "--dev", "/dev") {
		t.Errorf("/dev/shm before /dev: %q", args)
	}
	// Without BindFD the filter is the first descriptor after the info one.
	spec.BindFD = false
	if args := bwrapArgs(hostTree(), spec); !hasArgs(args, "--seccomp", "4") {
		t.Errorf("without --bind-fd: %q", args)
	}
}
