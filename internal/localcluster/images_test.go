package localcluster

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
)

// The tutorials' images, as the local node runs them: each on the Paddle
// release it asks for.
func TestBuiltinImagesRunOnTheirReleases(t *testing.T) {
	l := layout{t.TempDir()}
	rts := map[string]*paddleruntime.Runtime{}
	for _, r := range paddleruntime.Releases() {
		dir := t.TempDir()
		rts[r.Version] = &paddleruntime.Runtime{Dir: dir, BinDir: filepath.Join(dir, "bin"), PaddleVersion: r.Version, ParameterServer: r.ParameterServer, HostPaths: []string{dir}}
	}
	paddlejob := filepath.Join(t.TempDir(), "paddlejob")
	if err := writeImageTable(l, paddlejob, rts, ""); err != nil {
		t.Fatal(err)
	}
	table, err := node.LoadImageTable(l.imageTable())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		image, release string
		ps             bool
	}{
		{"registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1", "3.0.0", true}, // paddle-operator's example 1
		{"registry.baidubce.com/paddle-operator/demo-wide-and-deep:2.6.2", "2.6.2", true},
		{"registry.baidubce.com/paddle-operator/demo-resnet:v1", "3.0.0", true}, // example 2
		{"registry.baidubce.com/paddle-operator/demo-resnet:3.3.1", "3.3.1", false},
		{"registry.baidubce.com/paddle-operator/paddle-ubuntu:2.0.0-18.04", "2.6.2", true}, // example 5
		{"paddlepaddle/paddle:3.3.1", "3.3.1", false},
		{"paddlepaddle/paddle:latest", "3.0.0", true},
		{"paddlejob/paddle:mypaddle", "3.0.0", true}, // three-node tutorial
		{"paddlejob/paddle:2.6.2", "2.6.2", true},
		{"mypaddle/paddle:quickstart", "3.0.0", true}, // single-node tutorial
		{"yancey1989/paddle-job", "3.0.0", true},      // paddle.job SDK
	} {
		e, ok := table.Lookup(tt.image)
		if !ok || e.Paddle == nil {
			t.Errorf("%s: in the table %v, Paddle %+v", tt.image, ok, e.Paddle)
			continue
		}
		if e.Paddle.Version != tt.release || e.Paddle.ParameterServer != tt.ps {
			t.Errorf("%s runs on %s (parameter server %v); want %s (%v)", tt.image, e.Paddle.Version, e.Paddle.ParameterServer, tt.release, tt.ps)
		}
		bin := rts[tt.release].BinDir
		if path := e.Env["PATH"]; !strings.Contains(path, bin+":") {
			t.Errorf("%s: PATH %q lacks %s", tt.image, path, bin)
		}
		for v, rt := range rts {
			if v != tt.release && strings.Contains(e.Env["PATH"], rt.BinDir) {
				t.Errorf("%s: PATH %q has %s's bin too", tt.image, e.Env["PATH"], v)
			}
		}
	}
	// The three-node tutorial's start script runs `paddlejob launch` from the image.
	for _, image := range []string{"paddlejob/paddle:mypaddle", "paddlejob/paddle:2.6.2"} {
		if e, _ := table.Lookup(image); !strings.HasPrefix(e.Env["PATH"], filepath.Dir(paddlejob)+":") {
			t.Errorf("%s: PATH %q does not start with the paddlejob binary's directory", image, e.Env["PATH"])
		}
	}
}
