package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/paddlefailure"
)

// The page holds what the table makes: make generate was run after the
// table changed (make verify-generated checks the same).
func TestThePageIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", paddlefailure.DocPath)
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	section, err := Section(paddlefailure.Signatures())
	if err != nil {
		t.Fatal(err)
	}
	want, err := splice(page, section)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(page) {
		t.Errorf("%s is stale: run make generate (go run ./hack/failuredocs) and commit it", paddlefailure.DocPath)
	}
	for _, s := range paddlefailure.Signatures() {
		if !strings.Contains(string(page), "\n### "+s.Title+"\n") {
			t.Errorf("%s has no heading for %s", paddlefailure.DocPath, s.ID)
		}
	}
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"A write to a read-only volume":                     "a-write-to-a-read-only-volume",
		"paddle.set_device('gpu') on a CPU build of Paddle": "paddleset_devicegpu-on-a-cpu-build-of-paddle",
		"GEO-SGD with sparse_embedding":                     "geo-sgd-with-sparse_embedding",
		"`withGloo: 2` gives servers no Gloo group (2.6.2)": "withgloo-2-gives-servers-no-gloo-group-262",
	} {
		if got := Anchor(heading); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestSpliceNeedsTheMarkers(t *testing.T) {
	if _, err := splice([]byte("# A page\n"), []byte("x")); err == nil {
		t.Error("a page without the markers was accepted")
	}
	got, err := splice([]byte("a\n"+begin+"\nold\n"+end+"\nb\n"), []byte("new\n"))
	if err != nil || string(got) != "a\n"+begin+"\n\nnew\n\n"+end+"\nb\n" {
		t.Errorf("splice = %q, %v", got, err)
	}
}

// A signature whose doc is not its title's anchor would be a dead link.
func TestSectionRefusesAWrongAnchor(t *testing.T) {
	sigs := paddlefailure.Signatures()
	sigs[0].Doc = "elsewhere"
	if _, err := Section(sigs); err == nil || !strings.Contains(err.Error(), "elsewhere") {
		t.Errorf("Section: %v, want it to refuse doc elsewhere", err)
	}
}
