package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/paddlejob/paddlejob/internal/localcluster/node"
)

func TestSameImage(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"paddlepaddle/paddle", "paddlepaddle/paddle:3.0.0", true},
		{"paddlepaddle/paddle", "docker.io/paddlepaddle/paddle", true},
		{"busybox", "docker.io/library/busybox:1.36", true},
		{"registry.baidubce.com/paddle-operator/demo-resnet", "registry.baidubce.com/paddle-operator/demo-resnet:v1", true},
		{"mypaddle/paddle:quickstart", "mypaddle/paddle:other", false},
		{"paddlepaddle/paddle", "paddlepaddle/paddle-extra:v1", false},
		{"my-ctr:v1", "my-ctr:v2", false},
		{"localhost:5000/my-ctr", "localhost:5000/my-ctr:v1", true},
	} {
		if got := sameImage(tc.a, tc.b); got != tc.same {
			t.Errorf("sameImage(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

// The next image table names the output/ of every build context added so
// far, and keeps the ones the table named already.
func TestNextImageTableNamesTheOutputs(t *testing.T) {
	home, ctx := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte("FROM busybox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := layout{home}
	if err := os.WriteFile(l.imageTable(), []byte("images: {}\nbuildContextOutputs: [/srv/earlier/output]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	known := map[string]userImage{
		"a:v1": {Context: ctx, Output: filepath.Join(ctx, "output")},
		"b:v1": {Context: "/srv/b", Output: "/srv/b/output"},
	}
	next, err := nextImageTable(l, known, []AddedImage{{Image: "a:v1", Context: ctx, New: true}})
	if err != nil {
		t.Fatal(err)
	}
	table, err := node.LoadImageTable(next)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(ctx, "output"), "/srv/b/output", "/srv/earlier/output"}
	slices.Sort(want)
	if got := table.BuildContextOutputs(); !slices.Equal(got, want) {
		t.Errorf("outputs %q, want %q", got, want)
	}
}
