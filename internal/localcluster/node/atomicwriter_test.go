package node

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestWriteProjection(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	visible := func() []string {
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "..") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		return names
	}
	payloads := func() int {
		matches, _ := filepath.Glob(filepath.Join(dir, "..payload-*"))
		return len(matches)
	}

	if err := writeProjection(dir, map[string]projectedFile{
		"a":          {Data: []byte("one"), Mode: 0o644},
		"conf/b.yml": {Data: []byte("two"), Mode: 0o600},
	}); err != nil {
		t.Fatal(err)
	}
	if read("a") != "one" || read("conf/b.yml") != "two" || strings.Join(visible(), ",") != "a,conf" {
		t.Fatalf("first write: a=%q b=%q names=%v", read("a"), read("conf/b.yml"), visible())
	}
	if st, _ := os.Stat(filepath.Join(dir, "conf/b.yml")); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if link, _ := os.Readlink(filepath.Join(dir, "a")); link != "..data/a" {
		t.Errorf("a links to %q, want ..data/a", link)
	}

	// The new content replaces the old; removed keys and the old payload
	// directory disappear.
	if err := writeProjection(dir, map[string]projectedFile{"a": {Data: []byte("uno"), Mode: 0o644}, "c": {Data: []byte("tres"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if read("a") != "uno" || read("c") != "tres" || strings.Join(visible(), ",") != "a,c" || payloads() != 1 {
		t.Errorf("second write: a=%q c=%q names=%v payload dirs=%d", read("a"), read("c"), visible(), payloads())
	}

	if err := writeProjection(dir, map[string]projectedFile{}); err != nil {
		t.Fatal(err)
	}
	if len(visible()) != 0 || payloads() != 1 {
		t.Errorf("empty payload: names %v, payload dirs %d", visible(), payloads())
	}

	for _, bad := range []string{"/abs", "../up", "a/../../b", "..hidden", ""} {
		if err := writeProjection(dir, map[string]projectedFile{bad: {}}); err == nil {
			t.Errorf("path %q was accepted", bad)
		}
	}
}
