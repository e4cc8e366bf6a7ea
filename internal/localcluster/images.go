package localcluster

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/examples/images"
	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
	"github.com/paddlejob/paddlejob/internal/podtools/podcmd"
	"github.com/paddlejob/paddlejob/python"
)

// The node pulls no images: its image table says what a container of an
// image runs. The built-in entries make the images the tutorials and
// paddle-operator's examples name run as written:
//
//   - the Paddle images and the example images are data, beside the build
//     contexts (examples/images/images.yaml): the Paddle images run on the
//     release their tag names (the table's paddle section lists a runtime per
//     pinned release: its python first on PATH, its directories bound
//     read-only; node/paddlerelease.go chooses); the example images are the
//     build contexts, written under the cluster's home, whose Dockerfiles
//     build on those (and so name their release in their FROM line);
//   - the operator's image runs this paddlejob binary, the launcher's the
//     in-pod launcher paddlejob-launch found beside it.

// defaultPath is PATH in a container whose image sets none, as in Docker.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// launcherBinary is the in-pod launcher's binary (cmd/paddlejob-launch),
// which the build puts beside paddlejob.
const launcherBinary = podcmd.LauncherName

// launcherNames are the names the launcher has in an image that holds it:
// its own, and paddlejob for the command lines written for the CLI's
// `paddlejob launch` and `paddlejob data split` (seed 001's start.sh).
var launcherNames = []string{launcherBinary, "paddlejob"}

// launcherDir is where the launcher is copied under its names, the
// directory the images holding it put first on PATH.
func (l layout) launcherDir() string { return filepath.Join(l.home, "launcher") }

// paddleRuntimes is the image table's paddle section of installed
// runtimes, by release. A runtime the user named is the only one, and the
// default.
func paddleRuntimes(rts map[string]*paddleruntime.Runtime) *node.PaddleRuntimes {
	out := &node.PaddleRuntimes{Default: paddleruntime.DefaultRelease, Releases: map[string]node.PaddleRuntime{}}
	for version, rt := range rts {
		out.Releases[version] = node.InstalledPaddleRuntime(rt.BinDir, rt.ParameterServer, rt.HostPaths, defaultPath)
		if len(rts) == 1 {
			out.Default = version
		}
	}
	return out
}

// lookupPaddleRuntimes is the image table's paddle section for a cluster
// starting: the runtime the user named (checked), else every pinned
// release, those not in the cache yet pending — the node installs each
// when a pod first needs it (node/paddlepull.go). Nothing is installed
// here.
func lookupPaddleRuntimes(ctx context.Context, named, cacheDir string, log io.Writer) (*node.PaddleRuntimes, error) {
	if named != "" {
		rts, err := paddleruntime.EnsureAll(ctx, paddleruntime.Options{Dir: named, Log: log})
		if err != nil {
			return nil, err
		}
		return paddleRuntimes(rts), nil
	}
	out := &node.PaddleRuntimes{Default: paddleruntime.DefaultRelease, Releases: map[string]node.PaddleRuntime{}, CacheDir: cacheDir}
	var cached, pending []string
	var problem error
	for _, r := range paddleruntime.Releases() {
		rt, err := paddleruntime.Cached(ctx, paddleruntime.Options{CacheDir: cacheDir}, r.Version)
		if err != nil && problem == nil {
			problem = err
		}
		if rt == nil {
			out.Releases[r.Version] = node.PendingPaddleRuntime(r.Version, r.ParameterServer, defaultPath)
			pending = append(pending, r.Version)
			continue
		}
		out.Releases[r.Version] = node.InstalledPaddleRuntime(rt.BinDir, rt.ParameterServer, rt.HostPaths, defaultPath)
		cached = append(cached, r.Version)
	}
	switch {
	case len(pending) == 0:
		fmt.Fprintf(log, "Paddle runtimes %s: cached\n", strings.Join(cached, ", "))
	case len(cached) == 0:
		fmt.Fprintf(log, "Paddle runtimes %s: installed when a pod first needs one (about half a minute each)\n", strings.Join(pending, ", "))
	default:
		fmt.Fprintf(log, "Paddle runtimes %s: cached; %s: installed when a pod first needs one (about half a minute each)\n", strings.Join(cached, ", "), strings.Join(pending, ", "))
	}
	if problem != nil {
		fmt.Fprintf(log, "warning: the Paddle runtimes cannot be installed on this machine, so pods of Paddle images will wait (ErrImagePull): %v\n", problem)
	}
	return out, nil
}

// builtinImages are the built-in image table entries: those of the
// examples' table, with contexts where their contexts were written and
// launcherDir where the launcher was; and the operator's and the launcher's
// images, running paddlejob and the launcher. paddle are the node's Paddle
// runtimes.
func builtinImages(table *images.Table, contexts, launcherDir, paddlejob string, paddle *node.PaddleRuntimes) map[string]node.ImageEntry {
	entries := map[string]node.ImageEntry{
		// The operator's image, as config/ and the Helm chart deploy it.
		"ghcr.io/paddlejob/paddlejob-operator": {Command: []string{paddlejob, "operator"}},
		// The launcher of plain batch/v1 Jobs (the single-node, three-node and AWS tutorials' Jobs).
		"paddlejob/launcher": {Command: []string{filepath.Join(launcherDir, launcherBinary)}, HostPaths: []string{launcherDir}},
	}
	// The official image's CMD; the tag names the release.
	for _, image := range table.PaddleImages {
		entries[image] = node.ImageEntry{Args: []string{"/bin/bash"}, PaddleRelease: "tag"}
	}
	for _, name := range table.ContextNames() {
		c := table.Contexts[name]
		// A tag naming a release runs the example on it (demo-resnet:3.3.1);
		// other tags on the release of its Dockerfile's FROM.
		e := node.ImageEntry{Context: filepath.Join(contexts, name), PaddleRelease: "tag"}
		if c.Launcher {
			// The launcher first on PATH, then what its Dockerfile's FROM
			// gives (the default release's runtime, which the node swaps
			// for the one a tag names).
			e.HostPaths = []string{launcherDir}
			e.Env = map[string]string{"PATH": launcherDir + ":" + paddle.Releases[paddle.Default].Env["PATH"]}
		}
		for _, image := range c.Images {
			entries[image] = e
		}
	}
	return entries
}

// writeImageTable writes the example contexts and the launcher under the
// cluster's home and the node's image table: the built-in entries, then the
// user's table over them.
func writeImageTable(l layout, paddlejob string, paddle *node.PaddleRuntimes, userTable string) error {
	table, err := images.LoadTable()
	if err != nil {
		return err
	}
	contexts := l.imageContexts()
	if err := writeContexts(contexts, table); err != nil {
		return err
	}
	if err := writeLauncher(l.launcherDir(), launcherSource(paddlejob)); err != nil {
		return err
	}
	entries := builtinImages(table, contexts, l.launcherDir(), paddlejob, paddle)
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
	return fsutil.WriteFileAtomic(l.imageTable(), data, 0o644)
}

// writeContexts writes the build contexts the table names into dir, with
// the Python SDK in those whose programs import it.
func writeContexts(dir string, table *images.Table) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for _, name := range table.ContextNames() {
		context, err := fs.Sub(images.Contexts(), name)
		if err != nil {
			return err
		}
		if err := os.CopyFS(filepath.Join(dir, name), context); err != nil {
			return fmt.Errorf("writing the example image %s: %w", name, err)
		}
		// A Docker build copies the package in from python/src (see their
		// Dockerfiles).
		if table.Contexts[name].PythonSDK {
			if err := os.CopyFS(filepath.Join(dir, name, "paddlejob"), python.SDK()); err != nil {
				return fmt.Errorf("writing the Python SDK into the %s image: %w", name, err)
			}
		}
	}
	// os.CopyFS writes files read-only as they are in the binary; scripts
	// the images run must stay executable.
	return markScriptsExecutable(dir)
}

// launcherSource is the binary the launcher images run: paddlejob-launch
// beside paddlejob when the build put it there (make build: a fraction of
// the CLI's size), else the paddlejob binary itself, which is the launcher
// when run under its name (a `go install`ed CLI has no launcher beside it).
func launcherSource(paddlejob string) string {
	beside := filepath.Join(filepath.Dir(paddlejob), launcherBinary)
	if _, err := os.Stat(beside); err == nil {
		return beside
	}
	return paddlejob
}

// writeLauncher copies the launcher binary into dir under each of its
// names, as an image built by docs/launcher.md holds it. A copy, not a
// link, so that pods see this binary alone, not the directory it was
// built into.
func writeLauncher(dir, binary string) error {
	binary, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return fmt.Errorf("the launcher images run %s: %w", binary, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	first := filepath.Join(dir, launcherNames[0])
	if err := fsutil.CopyTree(binary, first); err != nil {
		return fmt.Errorf("copying the launcher %s: %w", binary, err)
	}
	for _, name := range launcherNames[1:] {
		if err := os.Link(first, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
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
