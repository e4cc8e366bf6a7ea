package node

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// A build context's output/ is writable, with what lies beneath it, while
// it is a real directory: replaced by a symlink (to the home, say), or
// gone, it makes nothing writable. Beside it, nothing is writable.
func TestBuildContextOutputsAreWritable(t *testing.T) {
	root := t.TempDir()
	ctx, elsewhere := filepath.Join(root, "my-ctr"), filepath.Join(root, "elsewhere")
	output := filepath.Join(ctx, "output")
	for _, d := range []string{filepath.Join(output, "ps"), elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rules := hostPathRules{Outputs: []string{output}}
	check := func(when string, want map[string]bool) {
		t.Helper()
		for p, w := range want {
			if got := rules.writablePath(p); got != w {
				t.Errorf("%s: %s writable: %v, want %v", when, p, got, w)
			}
		}
	}
	check("a directory", map[string]bool{
		output:                                 true,
		filepath.Join(output, "ps"):            true,
		filepath.Join(output, "ps", "not-yet"): true, // a DirectoryOrCreate below it
		ctx:                                    false,
		filepath.Join(ctx, "data"):             false,
		elsewhere:                              false,
		filepath.Join(root, "my-ctr-output"):   false,
	})

	if err := os.RemoveAll(output); err != nil {
		t.Fatal(err)
	}
	check("gone", map[string]bool{output: false, filepath.Join(output, "ps"): false})

	if err := os.Symlink(elsewhere, output); err != nil {
		t.Fatal(err)
	}
	check("a symlink in its place", map[string]bool{output: false, elsewhere: false, filepath.Join(output, "x"): false})

	// The grant is the path's own: a context under a symlinked directory
	// is named by its real path (the local cluster resolves it).
	link := filepath.Join(root, "link")
	if err := os.Symlink(ctx, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(output); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(output, 0o755); err != nil {
		t.Fatal(err)
	}
	rules.Outputs = []string{filepath.Join(link, "output")}
	check("named through a symlink", map[string]bool{output: false})
}

// The image table carries the build contexts' outputs, absolute paths only.
func TestImageTableBuildContextOutputs(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "images.yaml")
	if err := os.WriteFile(table, []byte("images: {}\nbuildContextOutputs: [/home/me/my-ctr/output/, /srv/b/output]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	it, err := LoadImageTable(table)
	if err != nil {
		t.Fatal(err)
	}
	if got := it.BuildContextOutputs(); len(got) != 2 || got[0] != "/home/me/my-ctr/output" || got[1] != "/srv/b/output" {
		t.Errorf("outputs %q", got)
	}
	if err := os.WriteFile(table, []byte("images: {}\nbuildContextOutputs: [my-ctr/output]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadImageTable(table); err == nil {
		t.Error("a relative output was taken")
	}
	var none *ImageTable
	if none.BuildContextOutputs() != nil {
		t.Error("no table has outputs")
	}
}

// A pod mounts of the host only what the cluster's owner listed, and never
// the kernel's views, a kubeconfig (nor a directory holding one, listed or
// not) or a file that is neither regular nor a directory.
func TestHostPathsDenyByDefault(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "user")
	kubeDir := filepath.Join(home, ".kube")
	kubeconfig := filepath.Join(kubeDir, "config")
	ro, rw, ctx := filepath.Join(base, "ro"), filepath.Join(base, "rw"), filepath.Join(base, "ctx")
	for _, d := range []string{kubeDir, filepath.Join(home, "data"), ro, rw, filepath.Join(ctx, "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(kubeconfig, []byte("users: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(ro, "root.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fifo := filepath.Join(rw, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	rules := hostPathRules{HiddenFiles: []string{kubeconfig}, Readable: []string{ro, home}, Writable: []string{rw}, Contexts: []string{ctx}}
	everything := hostPathRules{Readable: []string{"/"}}
	const notListed = "is in no directory pods may mount: allow it (or a directory holding it) with paddlejob up --host-path-ro DIR (read-only) or --host-path-rw DIR (read-write)"
	tests := []struct {
		rules    hostPathRules
		path     string
		refused  string // part of the error; "" when allowed
		writable bool
	}{
		{rules, ro, "", false},
		{rules, filepath.Join(ro, "not-yet"), "", false},
		{rules, rw, "", true},
		{rules, filepath.Join(ctx, "data"), "", false},
		{rules, filepath.Join(home, "data"), "", false},
		{rules, "/etc", "/etc " + notListed, false},
		{rules, "/etc/shadow", "/etc/shadow " + notListed, false},
		{rules, "/", "/ holds the host's /proc", false},
		{rules, filepath.Join(base, "elsewhere"), notListed, false},
		{rules, "/proc", "/proc is the host's /proc or inside it", false},
		{rules, "/proc/1/environ", "is the host's /proc or inside it", false},
		{rules, "/sys", "is the host's /sys", false},
		{rules, "/dev", "is the host's /dev", false},
		{rules, kubeconfig, "is or holds the kubeconfig " + kubeconfig, false},
		{rules, kubeDir, "is or holds the kubeconfig", false},
		{rules, home, "is or holds the kubeconfig", false}, // listed, and still refused
		{rules, socket, socket + " is a Unix socket: pods may mount only regular files and directories", false},
		{rules, fifo, "is a named pipe", false},
		{everything, "/etc", "", false},
		{everything, "/proc/self", "is the host's /proc", false},
		{everything, "/dev/null", "is the host's /dev", false},
		{everything, "/", "holds the host's /proc", false},
	}
	for _, tc := range tests {
		err := tc.rules.checkPath(tc.path)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s refused: %v", tc.path, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: %v, want refused with %q", tc.path, err, tc.refused)
		}
		if got := tc.rules.writablePath(tc.path); tc.refused == "" && got != tc.writable {
			t.Errorf("%s writable %v, want %v", tc.path, got, tc.writable)
		}
	}
}

// The OrCreate types create in a writable directory only, and follow no
// symlink there: a dangling link a pod left in its writable volume, to the
// cluster's home say, makes nothing where it points.
func TestOrCreateFollowsNoSymlink(t *testing.T) {
	base := t.TempDir()
	rw, ro, target := filepath.Join(base, "rw"), filepath.Join(base, "ro"), filepath.Join(base, "home")
	for _, d := range []string{rw, ro, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(target, "planted"), filepath.Join(rw, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(rw, "dir-link")); err != nil {
		t.Fatal(err)
	}
	rules := hostPathRules{Readable: []string{ro}, Writable: []string{rw}}
	file, dir := corev1.HostPathFileOrCreate, corev1.HostPathDirectoryOrCreate
	tests := []struct {
		path string
		kind corev1.HostPathType
		want string
	}{
		{filepath.Join(rw, "dangling"), file, "is or goes through a symbolic link"},
		{filepath.Join(rw, "dangling"), dir, "is or goes through a symbolic link"},
		{filepath.Join(ro, "new"), dir, "the node creates hostPaths only in the directories pods may write"},
		{filepath.Join(ro, "new-file"), file, "the node creates hostPaths only in the directories pods may write"},
	}
	for _, tc := range tests {
		err := prepareHostPath(rules, tc.path, &tc.kind)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want an error with %q", tc.kind, tc.path, err, tc.want)
		}
	}
	for _, name := range []string{"planted", "made"} {
		if _, err := os.Lstat(filepath.Join(target, name)); err == nil {
			t.Errorf("%s was created through a link", filepath.Join(target, name))
		}
	}
	for _, p := range []string{filepath.Join(ro, "new"), filepath.Join(ro, "new-file")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created in a read-only directory", p)
		}
	}
	// Through a link to a directory the path resolves out of rw, where
	// nothing is allowed (checkPath, before), and createBeneath would not
	// follow it either.
	root, err := openRoot(rw)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := createBeneath(root, "dir-link/made", true); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a directory through a link: %v", err)
	}
	if err := createBeneath(root, "a/b/c", false); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(filepath.Join(rw, "a/b/c")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("a/b/c: %v", err)
	}
}
