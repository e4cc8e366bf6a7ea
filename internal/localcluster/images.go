package localcluster

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/examples/images"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
	"github.com/paddlejob/paddlejob/python"
)

// The node pulls no images: its image table says what a container of an
// image runs. The built-in entries make the images the tutorials and paddle-operator's examples name run as
// written:
//
//   - the Paddle images (paddlepaddle/paddle and the tutorials' base images)
//     run on the Paddle release their tag names (the table's paddle section
//     lists a runtime per pinned release: its python first on PATH, its
//     directories bound read-only; node/paddlerelease.go chooses);
//   - the example images are the build contexts of examples/images, written
//     under the cluster's home, whose Dockerfiles build on those (and so
//     name their release in their FROM line);
//   - the operator's and the launcher's images run this paddlejob binary.

// defaultPath is PATH in a container whose image sets none, as in Docker.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// paddleRuntimes is the image table's paddle section: each installed
// runtime by release. A runtime the user named is the only one, and the
// default.
func paddleRuntimes(rts map[string]*paddleruntime.Runtime) *node.PaddleRuntimes {
	out := &node.PaddleRuntimes{Default: paddleruntime.DefaultRelease, Releases: map[string]node.PaddleRuntime{}}
	for version, rt := range rts {
		out.Releases[version] = node.PaddleRuntime{
			ParameterServer: rt.ParameterServer,
			HostPaths:       rt.HostPaths,
			Env:             map[string]string{"PATH": rt.BinDir + ":" + defaultPath},
		}
		if len(rts) == 1 {
			out.Default = version
		}
	}
	return out
}

// builtinImages are the built-in image table entries: contexts is where the
// example contexts were written, paddlejob the binary that runs the operator
// and the launcher.
func builtinImages(contexts, paddlejob string) map[string]node.ImageEntry {
	// The official image's CMD; the tag names the release.
	paddle := node.ImageEntry{Args: []string{"/bin/bash"}, PaddleRelease: "tag"}
	// A tag naming a release runs the example on it (demo-resnet:3.3.1); other
	// tags on the release of its Dockerfile's FROM.
	context := func(name string) node.ImageEntry {
		return node.ImageEntry{Context: filepath.Join(contexts, name), PaddleRelease: "tag"}
	}
	// The three-node tutorial's start script runs `paddlejob launch` inside the image,
	// which builds on demo-wide-and-deep (its Paddle comes from there).
	launcherImage := context("seed001-mypaddle")
	launcherImage.HostPaths = []string{filepath.Dir(paddlejob)}
	return map[string]node.ImageEntry{
		"paddlepaddle/paddle": paddle,
		"registry.baidubce.com/paddle-operator/paddle-ubuntu":   paddle, // paddle-operator's example 5: 2.0.0-18.04
		"registry.baidubce.com/paddle-operator/paddle-base-gpu": paddle, // FROM of example 2's image
		// paddle-operator's examples 1 and 3 (parameter server) and 2 (collective).
		"registry.baidubce.com/paddle-operator/demo-wide-and-deep": context("demo-wide-and-deep"),
		"registry.baidubce.com/paddle-operator/demo-resnet":        context("demo-resnet"),
		// The single-node and three-node tutorials' images, [YOUR_REPO] being paddlejob.
		"mypaddle/paddle:quickstart": context("seed000-quickstart"),
		"paddlejob/paddle":           launcherImage, // :mypaddle, or a release (:2.6.2)
		// The paddle.job SDK's runtime image: the wide & deep program.
		"yancey1989/paddle-job": context("demo-wide-and-deep"),
		// The paddle.job SDK's word2vec trainer package, reading its shard with the Python SDK.
		"paddlejob/seed002-word2vec": context("seed002-word2vec"),
		// The operator's image, as config/ and the Helm chart deploy it.
		"ghcr.io/paddlejob/paddlejob-operator": {Command: []string{paddlejob, "operator"}},
		// The launcher of plain batch/v1 Jobs (the single-node, three-node and AWS tutorials' Jobs).
		"paddlejob/launcher": {Command: []string{paddlejob, "launch"}},
	}
}

// writeImageTable writes the example contexts under the cluster's home and
// the node's image table: the built-in entries, then the user's table over
// them.
func writeImageTable(l layout, paddlejob string, rts map[string]*paddleruntime.Runtime, userTable string) error {
	contexts := l.imageContexts()
	if err := os.RemoveAll(contexts); err != nil {
		return err
	}
	if err := os.CopyFS(contexts, images.Contexts()); err != nil {
		return fmt.Errorf("writing the example images: %w", err)
	}
	// os.CopyFS writes files read-only as they are in the binary; scripts
	// the images run must stay executable.
	if err := markScriptsExecutable(contexts); err != nil {
		return err
	}
	// The paddle.job SDK's trainers and the wide & deep and ResNet programs import the
	// Python SDK: their contexts hold the package, which a Docker build has
	// copied in from python/src (see their Dockerfiles).
	for _, image := range []string{"seed002-word2vec", "demo-wide-and-deep", "demo-resnet"} {
		if err := os.CopyFS(filepath.Join(contexts, image, "paddlejob"), python.SDK()); err != nil {
			return fmt.Errorf("writing the Python SDK into the %s image: %w", image, err)
		}
	}
	entries := builtinImages(contexts, paddlejob)
	paddle := paddleRuntimes(rts)
	// The launcher image's PATH: the paddlejob binary first, then what its
	// Dockerfile's FROM gives (demo-wide-and-deep's release, the default).
	launcher := entries["paddlejob/paddle"]
	launcher.Env = map[string]string{"PATH": filepath.Dir(paddlejob) + ":" + paddle.Releases[paddle.Default].Env["PATH"]}
	entries["paddlejob/paddle"] = launcher
	if userTable != "" {
		data, err := os.ReadFile(userTable)
		if err != nil {
			return fmt.Errorf("reading the image table %s: %w", userTable, err)
		}
		var user node.ImageTableFile
		if err := yaml.UnmarshalStrict(data, &user); err != nil {
			return fmt.Errorf("image table %s: %w", userTable, err)
		}
		if user.Paddle != nil {
			return fmt.Errorf("image table %s: paddle: the Paddle runtimes are the local cluster's own (one per pinned release): remove the field and name a release in an image's Dockerfile instead", userTable)
		}
		for k, v := range user.Images {
			entries[k] = v
		}
	}
	data, err := yaml.Marshal(node.ImageTableFile{Images: entries, Paddle: paddle})
	if err != nil {
		return err
	}
	return os.WriteFile(l.imageTable(), data, 0o644)
}

// markScriptsExecutable makes the shell scripts of the contexts executable.
func markScriptsExecutable(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".sh" {
			return err
		}
		return os.Chmod(path, 0o755)
	})
}
