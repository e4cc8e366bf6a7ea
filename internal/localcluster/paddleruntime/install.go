package paddleruntime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// ErrUnsupportedPython is wrapped by the errors of an interpreter the pinned
// wheels do not exist for.
var ErrUnsupportedPython = errors.New("unsupported Python for the pinned Paddle runtime")

// ErrIndexUnreachable is wrapped by the error of an install that failed
// because pip could not reach the package index.
var ErrIndexUnreachable = errors.New("cannot reach the Python package index")

// Ensure returns the Paddle runtime: opts.Dir when named, else the cached
// runtime for the pin and interpreter, installing it first when missing (about
// a minute). It is safe to call from several processes at once: installs are
// serialised by a lock file and a waiting process reuses the finished one.
func Ensure(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.Dir != "" {
		return useNamed(ctx, opts.Dir)
	}
	return ensure(ctx, opts, pins)
}

// ensure returns the cached environment of a pinned set, installing it first
// when missing.
func ensure(ctx context.Context, opts Options, p pinSet) (*Runtime, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	at, err := locate(ctx, opts, p)
	if err != nil {
		return nil, err
	}
	root, key, link := at.root, at.key, at.link()
	if rt, err := Load(link); err == nil {
		return rt, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	unlock, err := fsutil.Lock(filepath.Join(root, ".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if rt, err := Load(link); err == nil { // another process installed it meanwhile
		return rt, nil
	}
	in := &installer{pins: p, python: at.python, py: at.py, root: root, key: key, log: opts.Log}
	return in.install(ctx)
}

// cacheSlot is where a pinned set's runtime for this machine's Python lives
// in the cache: the interpreter it is built from, checked against the pins,
// and the link root/key naming the installed runtime.
type cacheSlot struct {
	python    string
	py        pythonInfo
	root, key string
}

func (c cacheSlot) link() string { return filepath.Join(c.root, c.key) }

// locate finds the interpreter for the pins and the cache slot of its
// runtime.
func locate(ctx context.Context, opts Options, p pinSet) (cacheSlot, error) {
	python, err := findPython(p, opts.Python)
	if err != nil {
		return cacheSlot{}, err
	}
	py, err := probePython(ctx, python)
	if err != nil {
		return cacheSlot{}, err
	}
	if err := checkPython(p, python, py); err != nil {
		return cacheSlot{}, err
	}
	return cacheSlot{python: python, py: py, root: filepath.Join(opts.cacheDir(), p.dirName()), key: runtimeKey(p, py)}, nil
}

// useNamed returns the runtime in a directory the user named: one paddlejob
// installed (read from its manifest), or any venv or Python prefix whose
// bin/python3 imports paddle, which is then asked for its paths.
func useNamed(ctx context.Context, dir string) (*Runtime, error) {
	rt, err := Load(dir)
	if err == nil {
		return rt, nil
	}
	if !errors.Is(err, errNoManifest) {
		return nil, fmt.Errorf("the Paddle runtime named by $%s: %w", EnvDir, err)
	}
	real, err := realPath(dir)
	if err != nil {
		return nil, fmt.Errorf("the Paddle runtime named by $%s: %w", EnvDir, err)
	}
	python := filepath.Join(real, "bin", "python3")
	if _, err := os.Stat(python); err != nil {
		return nil, fmt.Errorf("the Paddle runtime named by $%s, %s, holds neither a %s nor a bin/python3", EnvDir, dir, ManifestName)
	}
	var stderr bytes.Buffer
	info, err := runVerify(ctx, python, &stderr)
	if err != nil {
		return nil, fmt.Errorf("the Paddle runtime named by $%s, %s: `import paddle` fails with its bin/python3: %v%s", EnvDir, dir, err, indent(lastLines(stderr.String(), 5)))
	}
	return &Runtime{
		Dir:             real,
		BinDir:          filepath.Dir(python),
		Python:          python,
		PaddleVersion:   info.Paddle,
		PythonVersion:   info.Version,
		ParameterServer: info.ParameterServer,
		HostPaths:       hostPaths(real, info.Prefix, info.BasePrefix, info.BaseExecPrefix),
	}, nil
}

// installer installs one runtime while holding the cache's lock.
type installer struct {
	pins      pinSet
	python    string // as found on PATH or named
	py        pythonInfo
	root, key string
	log       io.Writer
	logPath   string
	logFile   *os.File
}

func (in *installer) install(ctx context.Context) (rt *Runtime, err error) {
	in.removeUnpublished()
	in.logPath = filepath.Join(in.root, in.key+".log")
	if in.logFile, err = os.Create(in.logPath); err != nil {
		return nil, err
	}
	defer in.logFile.Close()
	dir, err := os.MkdirTemp(in.root, in.key+".")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := os.Chmod(dir, 0o755); err != nil { // MkdirTemp's 0700 would shut out a sandbox running as another uid
		return nil, err
	}
	link := filepath.Join(in.root, in.key)
	what := "the Paddle runtime (paddlepaddle " + in.pins.paddle + ")"
	if in.pins.env != "" {
		what = in.pins.label()
	}
	fmt.Fprintf(in.log, "installing %s into %s (once; about a minute)...\n", what, link)
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); in.progress(start, done) }()
	// stop waits for the progress goroutine: Log need not be safe for
	// concurrent writes.
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	defer stop()

	info, err := in.build(ctx, dir)
	if err != nil {
		return nil, err
	}
	m := &manifest{
		Format:          manifestFormat,
		Key:             in.key,
		Dir:             dir,
		PaddleVersion:   info.Paddle,
		PythonVersion:   info.Version,
		ParameterServer: info.ParameterServer,
		HostPaths:       hostPaths(dir, info.Prefix, info.BasePrefix, info.BaseExecPrefix),
		Installed:       time.Now().UTC().Truncate(time.Second),
	}
	if err := writeManifest(dir, m); err != nil {
		return nil, err
	}
	if err := in.publish(dir, link); err != nil {
		return nil, err
	}
	stop()
	fmt.Fprintf(in.log, "installed %s in %s\n", in.pins.label(), time.Since(start).Round(time.Second))
	in.noteOthers()
	return Load(link)
}

// build makes the venv in dir, installs the pins (pip.go) and checks that
// paddle imports; its output goes to the log.
func (in *installer) build(ctx context.Context, dir string) (verifyInfo, error) {
	if err := in.checkSpace(); err != nil {
		return verifyInfo{}, err
	}
	base := in.py.Executable // the interpreter itself, not a wrapper such as pyenv's shim
	if base == "" {
		base = in.python
	}
	if out, err := in.run(ctx, base, "-m", "venv", dir); err != nil {
		if strings.Contains(out, "ensurepip") || strings.Contains(out, "-venv") {
			return verifyInfo{}, fmt.Errorf("Python %s at %s cannot create a virtual environment: %s%s", in.py.Version, base, venvHint, indent(lastLines(out, 3)))
		}
		return verifyInfo{}, fmt.Errorf("creating %s's virtual environment with %s -m venv: %v%s\n(full output: %s)", in.pins.label(), base, err, indent(lastLines(out, 5)), in.logPath)
	}
	python := filepath.Join(dir, "bin", "python3")
	if err := in.installPins(ctx, dir, python); err != nil {
		return verifyInfo{}, err
	}
	var stderr bytes.Buffer
	if in.pins.paddle == "" {
		fmt.Fprintf(in.logFile, "\n$ %s -c <describe the venv>\n", python)
		info, err := runVerifyEnv(ctx, python, io.MultiWriter(in.logFile, &stderr))
		if err != nil {
			return verifyInfo{}, fmt.Errorf("%s installed, but its python fails: %v%s\n(full output: %s)", in.pins.label(), err, indent(lastLines(stderr.String(), 5)), in.logPath)
		}
		if prefix, err := realPath(info.Prefix); err != nil || prefix != dir {
			return verifyInfo{}, fmt.Errorf("%s's python reports prefix %s, not its venv %s (is PYTHONHOME set in a startup file?)", in.pins.label(), info.Prefix, dir)
		}
		return info, nil
	}
	fmt.Fprintf(in.logFile, "\n$ %s -c <import paddle>\n", python)
	info, err := runVerify(ctx, python, io.MultiWriter(in.logFile, &stderr))
	if err != nil {
		return verifyInfo{}, fmt.Errorf("the Paddle runtime installed, but `import paddle` fails: %v%s\n(full output: %s)", err, indent(lastLines(stderr.String(), 5)), in.logPath)
	}
	if info.Paddle != in.pins.paddle {
		return verifyInfo{}, fmt.Errorf("the Paddle runtime installed, but paddle reports version %s, not the pinned %s", info.Paddle, in.pins.paddle)
	}
	if info.ParameterServer != in.pins.parameterServer {
		return verifyInfo{}, fmt.Errorf("the Paddle runtime installed, but paddle %s's parameter-server runtime is %s, while its pins say `# parameter-server: %s`",
			info.Paddle, map[bool]string{true: "there", false: "missing"}[info.ParameterServer], map[bool]string{true: "yes", false: "no"}[in.pins.parameterServer])
	}
	if prefix, err := realPath(info.Prefix); err != nil || prefix != dir {
		return verifyInfo{}, fmt.Errorf("%s's python reports prefix %s, not its venv %s (is PYTHONHOME set in a startup file?)", in.pins.label(), info.Prefix, dir)
	}
	return info, nil
}

// run runs one install step with its output appended to the log, and returns
// that output when the step fails.
func (in *installer) run(ctx context.Context, name string, args ...string) (string, error) {
	fmt.Fprintf(in.logFile, "\n$ %s %s\n", name, strings.Join(args, " "))
	off, err := in.logFile.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", err
	}
	cmd := command(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = in.logFile, in.logFile // a file, not a pipe: nothing to copy, nothing to hang on
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(in.logPath)
		if int64(len(b)) > off {
			b = b[off:]
		}
		return string(b), err
	}
	return "", nil
}

// publish points the key's symlink at dir, atomically: the symlink is made
// under another name and renamed over the key.
func (in *installer) publish(dir, link string) error {
	tmp := filepath.Join(in.root, ".link-"+in.key)
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(dir), tmp); err != nil {
		return err
	}
	old, _ := os.Readlink(link)
	if st, err := os.Lstat(link); err == nil && st.IsDir() {
		// Not a symlink, so not published by this package: nothing to trust.
		if err := os.RemoveAll(link); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, link); err != nil {
		return err
	}
	// The key pointed at a runtime that no longer loads: it is replaced.
	if old != "" && old != filepath.Base(dir) && !strings.Contains(old, "/") {
		os.RemoveAll(filepath.Join(in.root, old))
	}
	return nil
}

// removeUnpublished deletes the directories no key points at: installs that
// failed or were killed. Only lock holders install, so none is in progress.
func (in *installer) removeUnpublished() {
	entries, err := os.ReadDir(in.root)
	if err != nil {
		return
	}
	used := map[string]bool{}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 && !strings.HasPrefix(e.Name(), ".") {
			if target, err := os.Readlink(filepath.Join(in.root, e.Name())); err == nil {
				used[target] = true
			}
		}
	}
	for _, e := range entries {
		switch {
		case e.IsDir() && !used[e.Name()]:
			os.RemoveAll(filepath.Join(in.root, e.Name()))
		case e.Type()&os.ModeSymlink != 0 && strings.HasPrefix(e.Name(), ".link-"):
			os.Remove(filepath.Join(in.root, e.Name()))
		}
	}
}

// noteOthers names the runtimes of other pins or interpreters. They are left
// in place: another interpreter, or an older paddlejob whose pods are still
// running, may use them, and deleting a venv under a running program breaks
// it. Only the user knows which are unused.
func (in *installer) noteOthers() {
	entries, err := os.ReadDir(in.root)
	if err != nil {
		return
	}
	var others []string
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 && e.Name() != in.key && !strings.HasPrefix(e.Name(), ".") {
			others = append(others, e.Name())
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(in.log, "  other %s in %s stay for whatever still uses them: %s (delete the unused ones with their targets to free space)\n", in.pins.plural(),
			in.root, strings.Join(others, ", "))
	}
}

func (in *installer) progress(start time.Time, done <-chan struct{}) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			fmt.Fprintf(in.log, "  still installing %s (%s so far; pip's output: %s)\n", in.pins.label(), time.Since(start).Round(time.Second), in.logPath)
		}
	}
}

// progressEvery is how often a running install says so; tests shorten it.
var progressEvery = 20 * time.Second

// lastLines returns up to n non-empty lines from the end of s, each cut to a
// readable length (pip's retry warnings run to hundreds of characters).
func lastLines(s string, n int) []string {
	var out []string
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		line := strings.TrimSpace(lines[i])
		if line == "" {
			continue
		}
		if len(line) > 400 {
			line = line[:400] + "..."
		}
		out = append([]string{line}, out...)
	}
	return out
}

// indent formats lines to follow a message, one per line.
func indent(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return ":\n\t" + strings.Join(lines, "\n\t")
}
