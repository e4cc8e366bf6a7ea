package localcluster

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/paddlejob/paddlejob/examples/images"
	"github.com/paddlejob/paddlejob/internal/localcluster/runtimenode"
)

// The container-runtime node's images are exact references: each example
// named without a tag gets the tags the examples' manifests name and one
// per Paddle release, built on it; one with a tag keeps it; the launcher's
// context holds the launcher; the Paddle images answer to the table's names
// with the releases' tags, latest (the default release) and seed 004's
// example 5's 2.0.0-18.04.
func TestRuntimeNodeImages(t *testing.T) {
	table, err := images.LoadTable()
	if err != nil {
		t.Fatal(err)
	}
	l := layout{home: "/home/u/.paddlejob"}
	contexts, aliases := runtimeNodeImages(table, l, "3.0.0")

	named := func(ref string) (runtimenode.ContextImage, bool) {
		for _, c := range contexts {
			if slices.Contains(c.Names, ref) {
				return c, true
			}
		}
		return runtimenode.ContextImage{}, false
	}
	for _, tc := range []struct {
		ref, context, release string
		launcher              bool
	}{
		{ref: "registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1", context: "demo-wide-and-deep"},
		{ref: "registry.baidubce.com/paddle-operator/demo-wide-and-deep:2.6.2", context: "demo-wide-and-deep", release: "2.6.2"},
		{ref: "registry.baidubce.com/paddle-operator/demo-resnet:latest", context: "demo-resnet"},
		{ref: "mypaddle/paddle:quickstart", context: "seed000-quickstart"},
		{ref: "paddlejob/paddle:mypaddle", context: "seed001-mypaddle", launcher: true},
		{ref: "paddlejob/paddle:2.6.2", context: "seed001-mypaddle", release: "2.6.2", launcher: true},
	} {
		c, ok := named(tc.ref)
		if !ok {
			t.Errorf("no image %s", tc.ref)
			continue
		}
		if c.Context != filepath.Join(l.imageContexts(), tc.context) || c.Release != tc.release || (c.Bin != nil) != tc.launcher {
			t.Errorf("%s: context %s release %q launcher %v, want %s, %q, %v", tc.ref, c.Context, c.Release, c.Bin != nil, tc.context, tc.release, tc.launcher)
		}
		if tc.launcher && c.Bin["paddlejob"] != filepath.Join(l.launcherDir(), "paddlejob") {
			t.Errorf("%s: /usr/local/bin/paddlejob from %q, want the cluster's launcher", tc.ref, c.Bin["paddlejob"])
		}
	}
	if _, ok := named("mypaddle/paddle:latest"); ok {
		t.Error("a name with a tag got other tags")
	}

	release := map[string]string{}
	for _, a := range aliases {
		for _, n := range a.Names {
			release[n] = a.Release
		}
	}
	for ref, want := range map[string]string{
		"paddlepaddle/paddle:2.6.2":                                       "2.6.2",
		"paddlepaddle/paddle:latest":                                      "3.0.0",
		"registry.baidubce.com/paddle-operator/paddle-ubuntu:2.0.0-18.04": "2.6.2",
		"registry.baidubce.com/paddle-operator/paddle-base-gpu:3.0.0":     "3.0.0",
	} {
		if release[ref] != want {
			t.Errorf("%s runs on %q, want %s", ref, release[ref], want)
		}
	}
}
