package localcluster

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/examples/images"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// builtinTable writes the built-in image table into a fresh home, with a
// runtime directory per pinned release and a paddlejob binary (a stand-in)
// with the launcher beside it, and loads it as the node does.
func builtinTable(t *testing.T) (*node.ImageTable, layout, map[string]*paddleruntime.Runtime) {
	t.Helper()
	l := layout{t.TempDir()}
	rts := map[string]*paddleruntime.Runtime{}
	for _, r := range paddleruntime.Releases() {
		dir := t.TempDir()
		rts[r.Version] = &paddleruntime.Runtime{Dir: dir, BinDir: filepath.Join(dir, "bin"), PaddleVersion: r.Version, ParameterServer: r.ParameterServer, HostPaths: []string{dir}}
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, launcherBinary), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeImageTable(l, filepath.Join(bin, "paddlejob"), paddleRuntimes(rts), ""); err != nil {
		t.Fatal(err)
	}
	table, err := node.LoadImageTable(l.imageTable())
	if err != nil {
		t.Fatal(err)
	}
	return table, l, rts
}

// The tutorials' images, as the local node runs them: each on the Paddle
// release it asks for.
func TestBuiltinImagesRunOnTheirReleases(t *testing.T) {
	table, l, rts := builtinTable(t)
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
		{"paddlejob/seed002-word2vec:v1", "3.0.0", true},
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
		e, _ := table.Lookup(image)
		if !strings.HasPrefix(e.Env["PATH"], l.launcherDir()+":") || !slices.Contains(e.HostPaths, l.launcherDir()) {
			t.Errorf("%s: PATH %q does not start with the launcher's directory %s, or it is not bound (%v)", image, e.Env["PATH"], l.launcherDir(), e.HostPaths)
		}
	}
}

// The launcher's images hold the launcher under both its names, the CLI's
// paddlejob included, and the launcher image runs it.
func TestTheLauncherImagesHoldTheLauncher(t *testing.T) {
	table, l, _ := builtinTable(t)
	for _, name := range launcherNames {
		data, err := os.ReadFile(filepath.Join(l.launcherDir(), name))
		if err != nil || string(data) != "#!/bin/sh\n" {
			t.Errorf("%s in %s: %q, %v; want the launcher", name, l.launcherDir(), data, err)
		}
	}
	e, _ := table.Lookup("paddlejob/launcher")
	if want := filepath.Join(l.launcherDir(), launcherBinary); len(e.Command) != 1 || e.Command[0] != want {
		t.Errorf("paddlejob/launcher runs %q; want %s", e.Command, want)
	}
}

// Without paddlejob-launch beside it (a `go install`ed CLI), the CLI itself
// is the launcher the images run: it is one when run under that name.
func TestWithoutTheLauncherTheCLIIsTheLauncher(t *testing.T) {
	bin := t.TempDir()
	paddlejob := filepath.Join(bin, "paddlejob")
	if err := os.WriteFile(paddlejob, []byte("#!/bin/sh\n# the CLI\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := layout{t.TempDir()}
	if err := writeImageTable(l, paddlejob, paddleRuntimes(nil), ""); err != nil {
		t.Fatal(err)
	}
	for _, name := range launcherNames {
		if data, err := os.ReadFile(filepath.Join(l.launcherDir(), name)); err != nil || string(data) != "#!/bin/sh\n# the CLI\n" {
			t.Errorf("%s in %s: %q, %v; want the CLI", name, l.launcherDir(), data, err)
		}
	}
	if err := writeImageTable(layout{t.TempDir()}, filepath.Join(t.TempDir(), "paddlejob"), paddleRuntimes(nil), ""); err == nil || !strings.Contains(err.Error(), "the launcher images run") {
		t.Fatalf("error %v; want one naming the missing binary", err)
	}
}

// notLocal are images of the samples the local node does not run, and why.
var notLocal = map[string]string{
	// The three-node tutorial's data Job: its image holds the tutorial's
	// data set, which the repository does not; `paddlejob data split`
	// replaces it (docs/launcher.md).
	"paddlepaddle/paddle-tutorial:k8s_data": "the tutorial's data set is not in the repository",
}

// Every image the samples and examples name runs on the local node, as
// written.
func TestEverySampleImageResolves(t *testing.T) {
	table, _, _ := builtinTable(t)
	root := testenv.RepoRoot()
	found := map[string][]string{}
	for _, dir := range []string{"config/samples", "examples/jobs"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
				return err
			}
			images, err := manifestImages(path)
			for _, image := range images {
				if rel, _ := filepath.Rel(root, path); !slices.Contains(found[image], rel) {
					found[image] = append(found[image], rel)
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) < 5 {
		t.Fatalf("found only %v in the samples: is the walk broken?", found)
	}
	for image, files := range found {
		if _, skip := notLocal[image]; skip {
			continue
		}
		if _, ok := table.Lookup(image); !ok {
			t.Errorf("image %s (%s) is not in the local node's table: add it to examples/images/images.yaml", image, strings.Join(files, ", "))
		}
	}
	for image := range notLocal {
		if _, ok := found[image]; !ok {
			t.Errorf("notLocal names %s, which no sample uses any more: drop it", image)
		}
	}
}

// manifestImages are the values of every "image" field of the YAML
// documents in a file, [YOUR_REPO] being paddlejob (which also makes the
// tutorials' manifests YAML).
func manifestImages(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data = bytes.ReplaceAll(data, []byte("[YOUR_REPO]"), []byte("paddlejob"))
	var images []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if s, ok := child.(string); ok && k == "image" {
					images = append(images, s)
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return images, nil
		}
		if err != nil {
			return nil, err
		}
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return nil, err
		}
		walk(v)
	}
}

// The built-in image table of docs/local-cluster.md names every image the
// node answers to: a context added to images.yaml is documented with it.
func TestTheDocsNameEveryBuiltInImage(t *testing.T) {
	table, err := images.LoadTable()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "local-cluster.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := append([]string{}, table.PaddleImages...)
	for _, c := range table.Contexts {
		names = append(names, c.Images...)
	}
	for _, name := range names {
		// The table abbreviates a registry path it gave in full before.
		short := name[strings.LastIndex(name, "/"):]
		if !strings.Contains(string(doc), "`"+name) && !strings.Contains(string(doc), "`…"+short) {
			t.Errorf("docs/local-cluster.md's image table does not name %s", name)
		}
	}
}
