package paddleruntime

// The Python interpreters a runtime is built with and runs: finding one,
// probing what it is, verifying what a runtime's venv holds.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/paddlejob/paddlejob/internal/paddleprobe"
)

// venvHint is what to install when the interpreter cannot make a venv:
// Debian and Ubuntu ship the venv module's ensurepip separately.
const venvHint = "install the venv module (Debian/Ubuntu: apt-get install python3-venv)"

func findPython(p pinSet, name string) (string, error) {
	if name == "" {
		path, err := exec.LookPath("python3")
		if err != nil {
			return "", fmt.Errorf("no Python to install %s with: python3 is not on PATH; install CPython %s and its venv module (Debian/Ubuntu: apt-get install python3 python3-venv), or name an interpreter", p.label(), pythonRangeVersions(p))
		}
		return path, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("the Python interpreter %s to install %s with: %w", name, p.label(), err)
	}
	return path, nil
}

func pythonRangeVersions(p pinSet) string {
	return strings.TrimPrefix(p.pythonRange(), "CPython ")
}

// pythonInfo is what probeScript reports about an interpreter.
type pythonInfo struct {
	Version        string `json:"version"`    // 3.11.7
	SysVersion     string `json:"sysVersion"` // sys.version: version, build and compiler
	Implementation string `json:"implementation"`
	BasePrefix     string `json:"basePrefix"`
	BaseExecPrefix string `json:"baseExecPrefix"`
	Executable     string `json:"executable"`
	Ensurepip      bool   `json:"ensurepip"`
	// Platform is sysconfig.get_platform(), such as linux-x86_64: the
	// platform the interpreter's wheels are built for.
	Platform string `json:"platform"`
}

// describe names the interpreter in messages: its implementation, version,
// platform and path, what decides which wheels pip can install for it.
func (py pythonInfo) describe(python string) string {
	platform := py.Platform
	if platform == "" {
		platform = runtime.GOOS + "-" + runtime.GOARCH
	}
	if py.Executable != "" {
		python = py.Executable
	}
	return fmt.Sprintf("%s %s on %s (%s)", implName(py.Implementation), py.Version, platform, python)
}

// probeScript describes the interpreter as one JSON line. It is valid Python
// 2 too, so a python3 that is really Python 2 gets a clear error.
const probeScript = `import json, sys
try:
    import ensurepip, venv
    ok = True
except ImportError:
    ok = False
try:
    import sysconfig
    platform = sysconfig.get_platform()
except ImportError:
    platform = ""
impl = getattr(sys, "implementation", None)
print(json.dumps({
    "version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "sysVersion": sys.version,
    "implementation": impl.name if impl else "unknown",
    "basePrefix": getattr(sys, "base_prefix", sys.prefix),
    "baseExecPrefix": getattr(sys, "base_exec_prefix", sys.exec_prefix),
    "executable": sys.executable,
    "ensurepip": ok,
    "platform": platform,
}))
`

func probePython(ctx context.Context, python string) (pythonInfo, error) {
	var stderr bytes.Buffer
	line, err := runPython(ctx, python, probeScript, &stderr)
	if err != nil {
		return pythonInfo{}, fmt.Errorf("%s does not run as a Python interpreter: %v%s", python, err, indent(lastLines(stderr.String(), 5)))
	}
	var info pythonInfo
	if err := json.Unmarshal(line, &info); err != nil || info.Version == "" {
		return pythonInfo{}, fmt.Errorf("%s printed no description of itself (is it a Python interpreter?): %q", python, line)
	}
	return info, nil
}

func checkPython(p pinSet, python string, py pythonInfo) error {
	if py.Implementation != "cpython" || !p.supports(py.Version) {
		return fmt.Errorf("%w: %s is %s %s, and %s have wheels for %s only; install one of those and name it as the interpreter",
			ErrUnsupportedPython, python, implName(py.Implementation), py.Version, p.packages(), p.pythonRange())
	}
	if !py.Ensurepip {
		return fmt.Errorf("Python %s at %s cannot create a virtual environment (no ensurepip module): %s", py.Version, python, venvHint)
	}
	return nil
}

func implName(impl string) string {
	switch impl {
	case "cpython":
		return "CPython"
	case "unknown": // Python 2 has no sys.implementation
		return "Python"
	}
	return impl
}

// verifyInfo is what verifyScript reports about a runtime.
type verifyInfo struct {
	Paddle string `json:"paddle"`
	// ParameterServer: paddle's native library has the parameter-server
	// runtime's classes.
	ParameterServer bool   `json:"ps"`
	Version         string `json:"version"`
	Prefix          string `json:"prefix"`
	BasePrefix      string `json:"basePrefix"`
	BaseExecPrefix  string `json:"baseExecPrefix"`
}

// verifyScript imports paddle, the check that the runtime works, and reports
// what the manifest records: whether the native library has the
// parameter-server runtime's classes is what tells a wheel that can run
// parameter-server jobs (2.6.2, 3.0.0) from one that cannot (3.1 on).
const verifyScript = `import json, sys
` + paddleprobe.NativeImport + `print(json.dumps({
    "paddle": paddle.__version__,
    "ps": ` + paddleprobe.HasParameterServer + `,
    "version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "prefix": sys.prefix,
    "basePrefix": sys.base_prefix,
    "baseExecPrefix": sys.base_exec_prefix,
}))
`

// envVerifyScript is verifyScript without paddle.
const envVerifyScript = `import json, sys
print(json.dumps({
    "version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "prefix": sys.prefix,
    "basePrefix": sys.base_prefix,
    "baseExecPrefix": sys.base_exec_prefix,
}))
`

// runVerifyEnv describes a venv of another pinned set (EnsureEnv): no
// paddle to import.
func runVerifyEnv(ctx context.Context, python string, stderr io.Writer) (verifyInfo, error) {
	line, err := runPython(ctx, python, envVerifyScript, stderr)
	if err != nil {
		return verifyInfo{}, err
	}
	var info verifyInfo
	if err := json.Unmarshal(line, &info); err != nil || info.Prefix == "" {
		return verifyInfo{}, fmt.Errorf("unexpected output %q", line)
	}
	return info, nil
}

func runVerify(ctx context.Context, python string, stderr io.Writer) (verifyInfo, error) {
	line, err := runPython(ctx, python, verifyScript, stderr)
	if err != nil {
		return verifyInfo{}, err
	}
	var info verifyInfo
	if err := json.Unmarshal(line, &info); err != nil || info.Paddle == "" {
		return verifyInfo{}, fmt.Errorf("unexpected output %q", line)
	}
	return info, nil
}

// pipVersionScript prints the version of the pip a venv holds, from its
// installed metadata.
const pipVersionScript = `import importlib.metadata
print(importlib.metadata.version("pip"))
`

// pipVersion is the version of the pip python runs.
func pipVersion(ctx context.Context, python string) (string, error) {
	var stderr bytes.Buffer
	line, err := runPython(ctx, python, pipVersionScript, &stderr)
	if err != nil {
		return "", fmt.Errorf("asking %s for its pip's version: %v%s", python, err, indent(lastLines(stderr.String(), 3)))
	}
	return string(line), nil
}

// runPython runs script and returns the last line it printed: Paddle may
// print notices of its own before.
func runPython(ctx context.Context, python, script string, stderr io.Writer) ([]byte, error) {
	var stdout bytes.Buffer
	cmd := command(ctx, python, "-c", script)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	return bytes.TrimSpace(lines[len(lines)-1]), nil
}

// command runs a Python process in the environment installs need.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = pythonEnv()
	cmd.WaitDelay = 5 * time.Second // a child left holding stdout must not hang Wait
	return cmd
}

// pythonEnv is the caller's environment without what would point Python or
// pip somewhere other than the venv (an index, proxy or certificate setting
// stays: a mirror may be the only way to PyPI), and with pip told not to
// prompt or look for its own upgrades.
func pythonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PYTHONHOME", "PYTHONPATH", "VIRTUAL_ENV", "PIP_USER", "PIP_TARGET", "PIP_PREFIX", "PIP_ROOT",
			"PIP_DISABLE_PIP_VERSION_CHECK", "PIP_NO_INPUT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1")
}
