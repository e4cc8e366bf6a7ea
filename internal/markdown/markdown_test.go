package markdown

import (
	"reflect"
	"strings"
	"testing"
)

func TestAnchorsAreGitHubs(t *testing.T) {
	text := "# The network\n## `up --nodes` and GPUs\n```sh\n# not a heading\n```\n## The network\n"
	if got, want := Anchors(text), []string{"the-network", "up---nodes-and-gpus", "the-network-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("anchors %q, want %q", got, want)
	}
}

func TestLinesSplitCodeFromProse(t *testing.T) {
	text := "Run `paddlejob up` then [see](a.md).\n```sh\nmake demo   # trains\n```\n"
	var got []string
	Lines(text, func(n int, code []string, prose string) {
		got = append(got, strings.Join(code, "|")+" / "+strings.TrimSpace(prose))
	})
	if want := []string{"paddlejob up / Run  then [see](a.md).", "make demo   / "}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}
