package paddleruntime

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
)

// EnvDir is the environment variable naming a runtime to use instead of the
// cache (commands pass it as Options.Dir).
const EnvDir = "PADDLEJOB_PADDLE_RUNTIME"

// ManifestName is the file inside a runtime that describes it. It is written
// last, so a directory without one is not a finished runtime.
const ManifestName = "paddlejob-runtime.json"

// manifestFormat changes when the manifest's meaning does; Load refuses other
// formats rather than guess. 2: parameterServer.
const manifestFormat = 2

// embeddedRequirements are the default release's pins.
var embeddedRequirements = mustReadPins("paddle-" + DefaultRelease + ".txt")

// pins is the default release's pin set, swapped by tests.
var pins = mustParsePins(embeddedRequirements)

// PinnedPaddleVersion is the default release: the paddlepaddle version an
// image naming no release runs on.
func PinnedPaddleVersion() string { return pins.paddle }

// Options says where the runtime may come from.
type Options struct {
	// Dir is a runtime the user named (EnvDir). It is used as is when it
	// holds a working runtime, and is an error otherwise: a mistyped path
	// should not silently cost a minute-long install.
	Dir string
	// CacheDir holds the runtimes under paddle-runtime/. Defaults to
	// kubebin.DefaultCacheDir(), the cache the control plane uses.
	CacheDir string
	// Python is the interpreter the venv is built from; python3 on PATH by
	// default.
	Python string
	// Log receives progress lines; installing takes about a minute the first
	// time.
	Log io.Writer
}

func (o Options) cacheDir() string {
	if o.CacheDir != "" {
		return o.CacheDir
	}
	return kubebin.DefaultCacheDir()
}

// Runtime is an installed Paddle runtime.
type Runtime struct {
	// Dir is the virtual environment, symlinks resolved.
	Dir string
	// BinDir is Dir/bin: python, python3, pip and Paddle's scripts.
	BinDir string
	// Python is Dir/bin/python3.
	Python string
	// PaddleVersion is what `import paddle` reports.
	PaddleVersion string
	// PythonVersion is the interpreter's version, such as 3.11.7.
	PythonVersion string
	// ParameterServer reports whether its paddle carries the
	// parameter-server runtime (DistFleetWrapper and CommContext in
	// paddle.base.libpaddle): PyPI's CPU wheels from 3.1 on do not.
	ParameterServer bool
	// HostPaths are the host directories a sandbox must bind (read-only) for
	// Python to run: the venv and the base interpreter's prefix, which the
	// venv's python links to.
	HostPaths []string
}

// manifest is ManifestName's content.
type manifest struct {
	Format        int    `json:"format"`
	Key           string `json:"key"`
	Dir           string `json:"dir"`
	PaddleVersion string `json:"paddleVersion"`
	PythonVersion string `json:"pythonVersion"`
	// ParameterServer is measured when the runtime is installed.
	ParameterServer bool      `json:"parameterServer"`
	HostPaths       []string  `json:"hostPaths"`
	Installed       time.Time `json:"installed"`
}

func (m *manifest) runtime() *Runtime {
	bin := filepath.Join(m.Dir, "bin")
	return &Runtime{
		Dir:             m.Dir,
		BinDir:          bin,
		Python:          filepath.Join(bin, "python3"),
		PaddleVersion:   m.PaddleVersion,
		PythonVersion:   m.PythonVersion,
		ParameterServer: m.ParameterServer,
		HostPaths:       m.HostPaths,
	}
}

// writeManifest writes the manifest atomically: a reader sees all of it or
// none.
func writeManifest(dir string, m *manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, ManifestName), append(b, '\n'), 0o644)
}

// errNoManifest tells a directory that is no paddlejob-built runtime from a
// broken one.
var errNoManifest = errors.New("no " + ManifestName)

// Load returns the runtime installed in dir (or the directory a symlink dir
// names) from its manifest, without running Python. It checks that the
// runtime's python and host paths still exist, which catches a base
// interpreter removed since the install.
func Load(dir string) (*Runtime, error) {
	real, err := realPath(dir)
	if err != nil {
		return nil, fmt.Errorf("no Paddle runtime at %s: %w", dir, err)
	}
	b, err := os.ReadFile(filepath.Join(real, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a Paddle runtime installed by paddlejob: %w", dir, errNoManifest)
	}
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("Paddle runtime %s: unreadable %s: %w", dir, ManifestName, err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("Paddle runtime %s: %s has format %d, this paddlejob reads %d (reinstall it)", dir, ManifestName, m.Format, manifestFormat)
	}
	if m.Dir != real {
		return nil, fmt.Errorf("Paddle runtime %s was installed at %s: a virtual environment cannot move (its scripts name their path); reinstall it", real, m.Dir)
	}
	rt := m.runtime()
	// Stat follows bin/python3's symlink into the base interpreter.
	if _, err := os.Stat(rt.Python); err != nil {
		return nil, fmt.Errorf("Paddle runtime %s: its python does not resolve (was the Python %s it was built from removed?): %w", dir, m.PythonVersion, err)
	}
	for _, p := range rt.HostPaths {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("Paddle runtime %s: host path %s: %w", dir, p, err)
		}
	}
	return rt, nil
}

// realPath is path made absolute with its symlinks resolved: the name a
// sandbox must bind.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// hostPaths lists what a sandbox must bind for the venv at dir to run: dir
// itself, the base interpreter's prefixes and, when it lies elsewhere, the
// directory of the interpreter binary the venv's python links to. Paths are
// resolved, and a path inside another listed one is dropped.
func hostPaths(dir string, prefixes ...string) []string {
	var all []string
	for _, p := range append([]string{dir}, prefixes...) {
		if p == "" {
			continue
		}
		if r, err := realPath(p); err == nil {
			p = r
		}
		all = append(all, p)
	}
	if exe, err := realPath(filepath.Join(dir, "bin", "python3")); err == nil {
		all = append(all, filepath.Dir(exe))
	}
	var out []string
	for i, p := range all {
		covered := false
		for j, q := range all {
			if (j < i && p == q) || (p != q && within(p, q)) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether path lies strictly inside dir.
func within(path, dir string) bool {
	return strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
