package node

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// beneathTree makes a root holding a file, a directory, and links inside and
// out of it: to a sibling "state" directory (the cluster's keys, say), to
// $HOME, absolute and relative. It returns the root and the state directory.
func beneathTree(t *testing.T) (root, state string) {
	t.Helper()
	base := t.TempDir()
	root, state = filepath.Join(base, "root"), filepath.Join(base, "state")
	for _, d := range []string{filepath.Join(root, "dir/sub"), filepath.Join(state, "pki")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{filepath.Join(root, "dir/file"): "inside", filepath.Join(state, "pki/ca.key"): "secret"} {
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home, _ := os.UserHomeDir()
	for link, target := range map[string]string{
		"abs-state":   state,
		"abs-pki":     filepath.Join(state, "pki"),
		"rel-state":   "../state",
		"dir/rel-pki": "../../state/pki",
		"home":        home,
		"rel-inside":  "dir/file",
		"dir/up-in":   "../dir/sub",
		"abs-inside":  filepath.Join(root, "dir"),
		"proc-root":   "/proc/self/root",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, state
}

func TestOpenBeneath(t *testing.T) {
	root, _ := beneathTree(t)
	tests := []struct {
		name    string
		policy  linkPolicy
		want    string // the file reached, relative to root; "" for an error
		wantErr error
	}{
		{"dir/file", noLinks, "dir/file", nil},
		{"/dir/file", noLinks, "dir/file", nil}, // names are taken relative to root
		{"dir/sub/../file", noLinks, "dir/file", nil},
		{"rel-inside", linksInside, "dir/file", nil},
		{"dir/up-in", linksInside, "dir/sub", nil},
		{"rel-inside", noLinks, "", errIsLink},
		{"dir/up-in/../file", noLinks, "dir/file", nil}, // cleaned before it is resolved
		{"abs-state", linksInside, "", errOutsideRoot},
		{"abs-pki/ca.key", linksInside, "", errOutsideRoot},
		{"rel-state/pki/ca.key", linksInside, "", errOutsideRoot},
		{"dir/rel-pki", linksInside, "", errOutsideRoot},
		{"home", linksInside, "", errOutsideRoot},
		{"abs-inside/file", linksInside, "", errOutsideRoot}, // absolute links never, even to inside
		{"proc-root", linksInside, "", errOutsideRoot},
		{"abs-state", noLinks, "", errIsLink},
		// ".." cannot climb out of root: the name is cleaned first, so it
		// is looked up beneath root, where it is missing.
		{"../state/pki/ca.key", linksInside, "", unix.ENOENT},
	}
	resolvers := map[string]func(*os.File, string, linkPolicy) (*os.File, error){"openat2": openBeneath, "walk": walkBeneath}
	for rname, resolve := range resolvers {
		dir, err := openRoot(root)
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		for _, tc := range tests {
			f, err := resolve(dir, tc.name, tc.policy)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("%s %q (policy %d): %v, want %v", rname, tc.name, tc.policy, err, tc.wantErr)
				}
				if f != nil {
					f.Close()
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %q: %v", rname, tc.name, err)
				continue
			}
			if real, _ := realPath(f); real != filepath.Join(root, tc.want) {
				t.Errorf("%s %q reached %s, want %s", rname, tc.name, real, filepath.Join(root, tc.want))
			}
			f.Close()
		}
	}
}

// The walk must refuse ".." above root itself, which openBeneath's cleaning
// never hands it but a relative link can.
func TestWalkBeneathDotDotFromALink(t *testing.T) {
	root, _ := beneathTree(t)
	if err := os.Symlink("../../..", filepath.Join(root, "dir/sub/up")); err != nil {
		t.Fatal(err)
	}
	dir, err := openRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	for _, resolve := range []func(*os.File, string, linkPolicy) (*os.File, error){openBeneath, walkBeneath} {
		if f, err := resolve(dir, "dir/sub/up/state/pki/ca.key", linksInside); !errors.Is(err, errOutsideRoot) {
			t.Errorf("a relative link climbing out of root: %v", err)
			if f != nil {
				f.Close()
			}
		}
	}
}

// A descriptor opened and checked keeps its file: swapping the path for a
// link to the state directory afterwards changes nothing of what is bound.
func TestOpenedSourceSurvivesASwap(t *testing.T) {
	root, state := beneathTree(t)
	dir, err := openRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	f, err := openBeneath(dir, "dir", noLinks)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(filepath.Join(root, "dir"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(state, "pki"), filepath.Join(root, "dir")); err != nil {
		t.Fatal(err)
	}
	// What bwrap binds is the descriptor's file (/proc/self/fd/N).
	data, err := os.ReadFile(filepath.Join("/proc/self/fd", strconv.Itoa(int(f.Fd())), "file"))
	if err != nil || string(data) != "inside" {
		t.Errorf("the opened directory now holds %q (%v), want the original file", data, err)
	}
	if _, err := os.Stat(filepath.Join("/proc/self/fd", strconv.Itoa(int(f.Fd())), "ca.key")); err == nil {
		t.Error("the descriptor followed the swap to the state directory")
	}
	// And a fresh resolution refuses the swapped-in link.
	if g, err := openBeneath(dir, "dir", noLinks); !errors.Is(err, errIsLink) {
		t.Errorf("the swapped path resolves: %v", err)
		if g != nil {
			g.Close()
		}
	}
}

func TestMkdirBeneath(t *testing.T) {
	root, state := beneathTree(t)
	dir, err := openRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if err := mkdirBeneath(dir, "a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(root, "a/b/c")); err != nil || !st.IsDir() {
		t.Errorf("a/b/c not made: %v", err)
	}
	for _, name := range []string{"abs-state/made", "rel-state/made", "dir/rel-pki/made"} {
		if err := mkdirBeneath(dir, name, 0o755); !errors.Is(err, errOutsideRoot) {
			t.Errorf("mkdir %s: %v, want it refused", name, err)
		}
	}
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		if e.Name() != "pki" {
			t.Errorf("made %s in the state directory", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(state, "pki/made")); err == nil {
		t.Error("made a directory in state/pki")
	}
}

func TestHostPathRules(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "home/u/.paddlejob")
	data := filepath.Join(base, "data")
	for _, d := range []string{filepath.Join(state, "pki"), filepath.Join(data, "out")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(state, "pki"), filepath.Join(data, "keys")); err != nil {
		t.Fatal(err)
	}
	// As the local cluster's node has them: its state directory inside the
	// cluster's home, both hidden.
	rules := hostPathRules{Hidden: []string{filepath.Join(state, "node"), state}, Readable: []string{data}, Writable: []string{filepath.Join(data, "out")}}
	tests := []struct {
		path      string
		refused   string // part of the error; "" when allowed
		writeable bool
	}{
		{state, "is the cluster's state directory " + state + " ", false}, // not a holder of node/
		{filepath.Join(state, "pki"), "is the cluster's state directory", false},
		{filepath.Join(state, "node/pods"), "is the cluster's state directory " + filepath.Join(state, "node") + " ", false},
		{filepath.Join(base, "home/u"), "holds the cluster's state directory " + state + ":", false}, // the outermost
		{"/", "holds the cluster's state directory", false},
		{filepath.Join(data, "keys"), "is the cluster's state directory", false},         // through a link
		{filepath.Join(data, "keys/new/dir"), "is the cluster's state directory", false}, // not made yet
		{filepath.Join(state, "../.paddlejob/pki"), "is the cluster's state directory", false},
		{data, "", false},
		{filepath.Join(data, "out"), "", true},
		{filepath.Join(data, "out/run-1/deep"), "", true},
		{filepath.Join(data, "outside"), "", false},
	}
	for _, tc := range tests {
		err := rules.checkPath(tc.path)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s refused: %v", tc.path, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: %v, want refused with %q", tc.path, err, tc.refused)
		}
		if got := rules.writablePath(tc.path); tc.refused == "" && got != tc.writeable {
			t.Errorf("%s writable %v, want %v", tc.path, got, tc.writeable)
		}
	}
}
