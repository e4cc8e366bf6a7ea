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
// image runs. The built-in entries make the images the seeds name run as
// written:
//
//   - the Paddle images (paddlepaddle/paddle and the tutorials' base images)
//     are the pinned Paddle runtime: its python first on PATH, its
//     directories bound read-only;
//   - the example images are the build contexts of examples/images, written
//     under the cluster's home, whose Dockerfiles build on those;
//   - the operator's and the launcher's images run this paddlejob binary.

// defaultPath is PATH in a container whose image sets none, as in Docker.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// builtinImages are the built-in image table entries: contexts is where the
// example contexts were written, paddlejob the binary that runs the operator
// and the launcher.
func builtinImages(contexts, paddlejob string, rt *paddleruntime.Runtime) map[string]node.ImageEntry {
	paddle := node.ImageEntry{
		HostPaths: rt.HostPaths,
		Env:       map[string]string{"PATH": rt.BinDir + ":" + defaultPath},
		Args:      []string{"/bin/bash"}, // the official image's CMD
	}
	context := func(name string) node.ImageEntry { return node.ImageEntry{Context: filepath.Join(contexts, name)} }
	// Seed 001's start script runs `paddlejob launch` inside the image.
	launcherImage := context("seed001-mypaddle")
	launcherImage.HostPaths = []string{filepath.Dir(paddlejob)}
	launcherImage.Env = map[string]string{"PATH": filepath.Dir(paddlejob) + ":" + rt.BinDir + ":" + defaultPath}
	return map[string]node.ImageEntry{
		"paddlepaddle/paddle": paddle,
		"registry.baidubce.com/paddle-operator/paddle-ubuntu":   paddle, // seed 004, example 5
		"registry.baidubce.com/paddle-operator/paddle-base-gpu": paddle, // FROM of example 2's image
		// Seed 004's examples 1 and 3 (parameter server) and 2 (collective).
		"registry.baidubce.com/paddle-operator/demo-wide-and-deep": context("demo-wide-and-deep"),
		"registry.baidubce.com/paddle-operator/demo-resnet":        context("demo-resnet"),
		// Seed 000's and 001's images, [YOUR_REPO] being paddlejob.
		"mypaddle/paddle:quickstart": context("seed000-quickstart"),
		"paddlejob/paddle:mypaddle":  launcherImage,
		// Seed 002's runtime image: the wide & deep program.
		"yancey1989/paddle-job": context("demo-wide-and-deep"),
		// Seed 002's word2vec trainer package, reading its shard with the Python SDK.
		"paddlejob/seed002-word2vec": context("seed002-word2vec"),
		// The operator's image, as config/ and the Helm chart deploy it.
		"ghcr.io/paddlejob/paddlejob-operator": {Command: []string{paddlejob, "operator"}},
		// The launcher of plain batch/v1 Jobs (seeds 000, 001, 003).
		"paddlejob/launcher": {Command: []string{paddlejob, "launch"}},
	}
}

// writeImageTable writes the example contexts under the cluster's home and
// the node's image table: the built-in entries, then the user's table over
// them.
func writeImageTable(l layout, paddlejob string, rt *paddleruntime.Runtime, userTable string) error {
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
	// Seed 002's trainers and the wide & deep trainers import the Python SDK:
	// their contexts hold the package, which a Docker build has copied in
	// from python/src (see their Dockerfiles).
	for _, image := range []string{"seed002-word2vec", "demo-wide-and-deep"} {
		if err := os.CopyFS(filepath.Join(contexts, image, "paddlejob"), python.SDK()); err != nil {
			return fmt.Errorf("writing the Python SDK into the %s image: %w", image, err)
		}
	}
	entries := builtinImages(contexts, paddlejob, rt)
	if userTable != "" {
		data, err := os.ReadFile(userTable)
		if err != nil {
			return fmt.Errorf("reading the image table %s: %w", userTable, err)
		}
		var user struct {
			Images map[string]node.ImageEntry `json:"images"`
		}
		if err := yaml.UnmarshalStrict(data, &user); err != nil {
			return fmt.Errorf("image table %s: %w", userTable, err)
		}
		for k, v := range user.Images {
			entries[k] = v
		}
	}
	data, err := yaml.Marshal(map[string]any{"images": entries})
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
