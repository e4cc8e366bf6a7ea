package paddleruntime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestEnsureInstallsOnceThenReuses(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 20 * time.Millisecond
	base, cache := tempDir(t), tempDir(t)
	python, pipCount := fake{pipSleep: "0.2", pipOut: "Successfully installed paddlepaddle-3.0.0"}.write(t, base)
	root := filepath.Join(cache, "paddle-runtime")
	// What a killed install leaves behind is removed by the next.
	leftover := filepath.Join(root, "paddle-3.0.0-py3.11.7-000000000000.123")
	if err := os.MkdirAll(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	var log testutil.SyncBuffer
	opts := Options{CacheDir: cache, Python: python, Log: &log}

	rt, err := Ensure(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	key := runtimeKey(pins, pythonInfo{Version: "3.11.7", SysVersion: "3.11.7 (fake)", BasePrefix: base})
	link := filepath.Join(root, key)
	if target, err := os.Readlink(link); err != nil || filepath.Join(root, target) != rt.Dir {
		t.Errorf("%s -> %q, %v; want a symlink to %s", link, target, err, rt.Dir)
	}
	want := &Runtime{
		Dir:             rt.Dir,
		BinDir:          filepath.Join(rt.Dir, "bin"),
		Python:          filepath.Join(rt.Dir, "bin", "python3"),
		PaddleVersion:   "3.0.0",
		PythonVersion:   "3.11.7",
		ParameterServer: true,
		HostPaths:       []string{rt.Dir, base},
	}
	if !reflect.DeepEqual(rt, want) {
		t.Errorf("Ensure = %+v\nwant %+v", rt, want)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover of a killed install is still there: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(rt.Dir, "paddlejob-requirements.txt")); err != nil || !bytes.Equal(b, embeddedRequirements) {
		t.Errorf("the runtime does not record the requirements it was installed from: %v", err)
	}
	if runs := pipRuns(t, pipCount); !strings.HasSuffix(runs[len(runs)-1], "--require-hashes -r "+filepath.Join(rt.Dir, "paddlejob-requirements.txt")) {
		t.Errorf("pip ran as %q; want install --no-deps ... --require-hashes -r ... last", runs)
	}
	for _, line := range []string{
		"installing the Paddle runtime (paddlepaddle 3.0.0) into " + link + " (once; about a minute)",
		"still installing the Paddle runtime",
		"installed the Paddle runtime in",
	} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("log lacks %q:\n%s", line, log.String())
		}
	}

	logged := log.String()
	again, err := Ensure(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, rt) || pipInstalls(t, pipCount) != 1 || log.String() != logged {
		t.Errorf("second Ensure = %+v with %d pip installs and log %q; want the first runtime, reused silently", again, pipInstalls(t, pipCount), log.String()[len(logged):])
	}
	if loaded, err := Load(link); err != nil || !reflect.DeepEqual(loaded, rt) {
		t.Errorf("Load(%s) = %+v, %v; want %+v", link, loaded, err, rt)
	}
}

func TestEnsureAChangedPinInstallsAnew(t *testing.T) {
	defer func(p pinSet) { pins = p }(pins)
	base, cache := tempDir(t), tempDir(t)
	python, pipCount := fake{}.write(t, base)
	var log testutil.SyncBuffer
	opts := Options{CacheDir: cache, Python: python, Log: &log}
	first, err := Ensure(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// One wheel fewer: a paddlepaddle wheel other than cp311's (which the
	// fake's report, resolved on 3.11, names) goes.
	pins = mustParsePins(bytes.Replace(embeddedRequirements, []byte("    --hash=sha256:8fc4865efd3656ee99424124792cb88a642151b4d591a7d6d4a5c6afdae95959 \\\n"), nil, 1))
	if bytes.Equal(pins.raw, embeddedRequirements) {
		t.Fatal("the pin did not change")
	}
	second, err := Ensure(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if second.Dir == first.Dir || pipInstalls(t, pipCount) != 2 {
		t.Errorf("after a pin change Ensure gave %s (first %s) with %d pip installs; want a new runtime", second.Dir, first.Dir, pipInstalls(t, pipCount))
	}
	if _, err := Load(first.Dir); err != nil {
		t.Errorf("the first pin's runtime was not left in place: %v", err)
	}
	if !strings.Contains(log.String(), "other Paddle runtimes in") {
		t.Errorf("the log does not name the runtimes left in place:\n%s", log.String())
	}
}

func TestEnsureConcurrentInstallsOnce(t *testing.T) {
	base, cache := tempDir(t), tempDir(t)
	python, pipCount := fake{pipSleep: "0.3"}.write(t, base)
	opts := Options{CacheDir: cache, Python: python}
	var wg sync.WaitGroup
	dirs := make([]string, 3)
	for i := range dirs {
		wg.Go(func() {
			rt, err := Ensure(context.Background(), opts)
			if err != nil {
				t.Error(err)
				return
			}
			dirs[i] = rt.Dir
		})
	}
	wg.Wait()
	if n := pipInstalls(t, pipCount); n != 1 || dirs[0] != dirs[1] || dirs[1] != dirs[2] {
		t.Errorf("three concurrent Ensures ran pip %d times and gave %q; want one install shared", n, dirs)
	}
}

func TestEnsureFailures(t *testing.T) {
	tests := []ensureFailureCase{
		{
			name: "Python too old", fake: fake{version: "3.10.13"}, wantIs: ErrUnsupportedPython,
			want:  []string{"is CPython 3.10.13", "paddlepaddle 3.0.0 and its pinned dependencies have wheels for CPython 3.11-3.13 only"},
			noPip: true,
		},
		{
			name: "Python too new", fake: fake{version: "3.14.0"}, wantIs: ErrUnsupportedPython,
			want: []string{"is CPython 3.14.0"}, noPip: true,
		},
		{
			name: "no venv module", fake: fake{noPip: true},
			want: []string{"cannot create a virtual environment (no ensurepip module)", "apt-get install python3-venv"}, noPip: true,
		},
		{
			name: "paddle does not import", fake: fake{badImport: true},
			want: []string{"installed, but `import paddle` fails", "No module named 'paddle'"}, wantLog: true,
		},
		{
			name: "another paddle version", fake: fake{paddle: "3.1.0"},
			want: []string{"paddle reports version 3.1.0, not the pinned 3.0.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkEnsureFails(t, tt) })
	}
}

// ensureFailureCase is a way Python or pip fails, and what the error says.
type ensureFailureCase struct {
	name    string
	fake    fake
	wantIs  error
	want    []string
	wantLog bool // the error names the install's log
	noPip   bool // pip must not have run
	// pins replaces the default release's pins for the case.
	pins []byte
}

// checkEnsureFails checks Ensure's error, the log it names, that pip did not
// run when it must not, and that nothing half-built is left in the cache.
func checkEnsureFails(t *testing.T, tt ensureFailureCase) {
	t.Helper()
	if tt.pins != nil {
		defer func(p pinSet) { pins = p }(pins)
		pins = mustParsePins(tt.pins)
	}
	base, cache := tempDir(t), tempDir(t)
	python, pipLog := tt.fake.write(t, base)
	_, err := Ensure(context.Background(), Options{CacheDir: cache, Python: python})
	if err == nil {
		t.Fatal("Ensure succeeded")
	}
	t.Log(err)
	if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
		t.Errorf("error %q is not %v", err, tt.wantIs)
	}
	for _, s := range tt.want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%s", s, err)
		}
	}
	root := filepath.Join(cache, "paddle-runtime")
	if tt.wantLog {
		logs, _ := filepath.Glob(filepath.Join(root, "*.log"))
		if len(logs) != 1 || !strings.Contains(err.Error(), logs[0]) {
			t.Errorf("error does not name the install log %v:\n%s", logs, err)
		}
	}
	if tt.noPip && len(pipRuns(t, pipLog)) != 0 {
		t.Errorf("pip ran though the install was refused up front: %q", pipRuns(t, pipLog))
	}
	// Nothing half-built stays where a later Ensure would look.
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.Name() != ".lock" && !strings.HasSuffix(e.Name(), ".log") {
			t.Errorf("a failed install left %s in the cache", e.Name())
		}
	}
}

func TestEnsureAfterAFailedInstall(t *testing.T) {
	base, cache := tempDir(t), tempDir(t)
	python, _ := fake{resolve: pipTestdata(t, "resolve-no-dns.out"), resolveExit: 1, otherPins: &fakePin{}}.write(t, base)
	opts := Options{CacheDir: cache, Python: python}
	if _, err := Ensure(context.Background(), opts); !errors.Is(err, ErrIndexUnreachable) {
		t.Fatalf("Ensure offline = %v; want ErrIndexUnreachable", err)
	}
	fake{}.write(t, base) // the network is back
	if rt, err := Ensure(context.Background(), opts); err != nil || rt.PaddleVersion != "3.0.0" {
		t.Fatalf("Ensure after the failure = %+v, %v", rt, err)
	}
}

func TestEnsureWithoutPython(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Ensure(context.Background(), Options{CacheDir: t.TempDir()})
	for _, s := range []string{"python3 is not on PATH", "apt-get install python3 python3-venv", "3.11-3.13"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Ensure without python3 = %v; want an error containing %q", err, s)
		}
	}
	_, err = Ensure(context.Background(), Options{CacheDir: t.TempDir(), Python: "/nonexistent/python3.11"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/python3.11") {
		t.Errorf("Ensure with a missing interpreter = %v; want an error naming it", err)
	}
}

// fakeRuntime writes what Load reads: a venv whose bin/python3 exists, a
// base prefix and the manifest.
func fakeRuntime(t *testing.T) (dir string, m *manifest) {
	t.Helper()
	dir, base := tempDir(t), tempDir(t)
	if err := os.MkdirAll(filepath.Join(base, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "bin", "python3"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "bin", "python3"), filepath.Join(dir, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	m = &manifest{
		Format: manifestFormat, Key: "paddle-3.0.0-py3.11.7-0123456789ab", Dir: dir,
		PaddleVersion: "3.0.0", PythonVersion: "3.11.7", ParameterServer: true,
		HostPaths: hostPaths(dir, base), Installed: time.Date(2026, 5, 9, 7, 35, 25, 0, time.UTC),
	}
	if err := writeManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir, m
}

func TestEnsureNamedDir(t *testing.T) {
	t.Run("installed by paddlejob: read, nothing run", func(t *testing.T) {
		dir, m := fakeRuntime(t)
		rt, err := Ensure(context.Background(), Options{Dir: dir, Python: "/nonexistent/python3", CacheDir: "/nonexistent"})
		if err != nil || !reflect.DeepEqual(rt, m.runtime()) {
			t.Errorf("Ensure = %+v, %v; want %+v", rt, err, m.runtime())
		}
	})
	t.Run("another venv with paddle: used as is", func(t *testing.T) {
		base, venv := tempDir(t), tempDir(t)
		python, _ := fake{paddle: "2.6.2"}.write(t, base)
		if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(python, filepath.Join(venv, "bin", "python3")); err != nil {
			t.Fatal(err)
		}
		rt, err := Ensure(context.Background(), Options{Dir: venv, CacheDir: "/nonexistent"})
		if err != nil {
			t.Fatal(err)
		}
		if rt.Dir != venv || rt.PaddleVersion != "2.6.2" || !slices.Equal(rt.HostPaths, []string{venv, base}) {
			t.Errorf("Ensure = %+v; want the venv as is, paddle 2.6.2, host paths %s and %s", rt, venv, base)
		}
	})
	t.Run("no runtime there", func(t *testing.T) {
		_, err := Ensure(context.Background(), Options{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "$"+EnvDir) || !strings.Contains(err.Error(), "holds neither") {
			t.Errorf("Ensure = %v; want an error naming $%s", err, EnvDir)
		}
	})
	t.Run("its python lacks paddle", func(t *testing.T) {
		base := tempDir(t)
		fake{badImport: true}.write(t, base)
		_, err := Ensure(context.Background(), Options{Dir: base})
		if err == nil || !strings.Contains(err.Error(), "`import paddle` fails") || !strings.Contains(err.Error(), "No module named 'paddle'") {
			t.Errorf("Ensure = %v; want an error saying import paddle fails and why", err)
		}
	})
	t.Run("a broken paddlejob runtime is an error, not a reinstall", func(t *testing.T) {
		dir, m := fakeRuntime(t)
		os.RemoveAll(m.HostPaths[1])
		if _, err := Ensure(context.Background(), Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "does not resolve") {
			t.Errorf("Ensure = %v; want the reason the named runtime is broken", err)
		}
	})
}

// Each pinned release installs into its own runtime, and what the install
// measures (the parameter-server runtime) must be what its pins declare.
func TestEnsureReleases(t *testing.T) {
	base, cache := tempDir(t), tempDir(t)
	python, pipCount := fake{paddle: "3.3.1", noPS: true, report: "report-3.3.1-cp311.json"}.write(t, base)
	opts := Options{CacheDir: cache, Python: python}
	rt, err := EnsureRelease(context.Background(), opts, "3.3.1")
	if err != nil {
		t.Fatal(err)
	}
	if rt.PaddleVersion != "3.3.1" || rt.ParameterServer || !strings.Contains(rt.Dir, "/paddle-3.3.1-py3.11.7-") {
		t.Errorf("EnsureRelease(3.3.1) = %+v; want 3.3.1 without the parameter-server runtime", rt)
	}
	if b, _ := os.ReadFile(filepath.Join(rt.Dir, "paddlejob-requirements.txt")); !bytes.Contains(b, []byte("\npaddlepaddle==3.3.1 \\\n")) {
		t.Errorf("the 3.3.1 runtime was installed from:\n%s", b)
	}
	// An index that resolves 3.0.0's pins to 3.3.1's is refused by the
	// install's report: nothing is published, the venv is removed.
	if _, err := EnsureRelease(context.Background(), opts, "3.0.0"); err == nil || !strings.Contains(err.Error(), "installing the Paddle runtime: pip's resolve does not hold paddlepaddle==3.0.0 (it has 3.3.1)") {
		t.Errorf("EnsureRelease(3.0.0) resolved as 3.3.1 = %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "paddle-runtime", "paddle-3.0.0-*")); len(left) != 1 || !strings.HasSuffix(left[0], ".log") {
		t.Errorf("the refused 3.0.0 install left %q; want only its log", left)
	}
	// 3.0.0's pins say it has the runtime: a wheel without it is refused.
	python, _ = fake{paddle: "3.0.0", noPS: true}.write(t, tempDir(t))
	_, err = EnsureRelease(context.Background(), Options{CacheDir: tempDir(t), Python: python}, "3.0.0")
	if err == nil || !strings.Contains(err.Error(), "paddle 3.0.0's parameter-server runtime is missing, while its pins say `# parameter-server: yes`") {
		t.Errorf("EnsureRelease(3.0.0) of a wheel without the parameter-server runtime = %v", err)
	}
	if _, err := EnsureRelease(context.Background(), opts, "3.2.2"); err == nil || !strings.Contains(err.Error(), "not pinned") {
		t.Errorf("EnsureRelease(3.2.2) = %v; want not pinned", err)
	}
	if n := pipInstalls(t, pipCount); n != 2 {
		t.Errorf("%d pip installs; want 2 (3.3.1, and 3.0.0's, refused by its report)", n)
	}
}

// A runtime the user names is the only one: every image runs on it.
func TestEnsureAllWithANamedRuntime(t *testing.T) {
	dir, _ := fakeRuntime(t)
	rts, err := EnsureAll(context.Background(), Options{Dir: dir, CacheDir: tempDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rts) != 1 || rts["3.0.0"] == nil || !rts["3.0.0"].ParameterServer {
		t.Errorf("EnsureAll with a named runtime = %v; want only it, as 3.0.0", rts)
	}
}
