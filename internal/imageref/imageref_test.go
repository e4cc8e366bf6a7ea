package imageref

import (
	"strings"
	"testing"
)

func TestFamiliar(t *testing.T) {
	for _, tc := range []struct{ ref, familiar, name, tag string }{
		{"busybox", "busybox", "busybox", "latest"},
		{"busybox:1.36", "busybox:1.36", "busybox", "1.36"},
		{"docker.io/library/busybox:1.36", "busybox:1.36", "busybox", "1.36"},
		{"index.docker.io/library/busybox", "busybox", "busybox", "latest"},
		{"library/busybox", "busybox", "busybox", "latest"},
		{"docker.io/paddlepaddle/paddle:3.0.0", "paddlepaddle/paddle:3.0.0", "paddlepaddle/paddle", "3.0.0"},
		{"localhost:5000/team/trainer:v1", "localhost:5000/team/trainer:v1", "localhost:5000/team/trainer", "v1"},
		{"registry.example.com:5000/trainer", "registry.example.com:5000/trainer", "registry.example.com:5000/trainer", "latest"},
		{"busybox@sha256:" + strings.Repeat("a", 64), "busybox@sha256:" + strings.Repeat("a", 64), "busybox", "sha256:" + strings.Repeat("a", 64)},
		// Patterns of the node's image table: no reference, Docker Hub's
		// prefixes dropped all the same.
		{"docker.io/paddlepaddle/paddle*", "paddlepaddle/paddle*", "paddlepaddle/paddle*", "latest"},
		{"docker.io/library/demo:3*", "demo:3*", "demo", "3*"},
	} {
		if got := Familiar(tc.ref); got != tc.familiar {
			t.Errorf("Familiar(%q) = %q, want %q", tc.ref, got, tc.familiar)
		}
		if name, tag := NameAndTag(tc.ref); name != tc.name || tag != tc.tag {
			t.Errorf("NameAndTag(%q) = %q, %q; want %q, %q", tc.ref, name, tag, tc.name, tc.tag)
		}
	}
	for ref, want := range map[string]bool{"busybox": false, "busybox:latest": true, "busybox:1": true, "localhost:5000/x": false, "x@sha256:" + strings.Repeat("0", 64): true} {
		if got := HasTag(ref); got != want {
			t.Errorf("HasTag(%q) = %v, want %v", ref, got, want)
		}
	}
}
