package paddleruntime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fake describes a stand-in for python3: a shell script that answers the
// calls Ensure makes (describe yourself, -m venv, pip's version, -m pip
// install: the install, dry runs of each pin alone; import paddle) with
// what real pip printed (testdata/pip), and logs pip's runs.
type fake struct {
	version    string // what the interpreter reports; 3.11.7 by default
	paddle     string // what `import paddle` reports; 3.0.0 by default
	noPip      bool   // ensurepip missing
	pipVersion string // the venv's pip; 23.2.1 by default
	// upgradeOut is pip's output upgrading itself from pip.txt, which
	// fails when it is set.
	upgradeOut string

	// resolve is pip's output for an install of the set that fails while
	// it resolves, exiting resolveExit; when that is 0 the install runs
	// and, when it succeeds, writes report (a file of testdata/pip;
	// report-3.0.0-cp311.json by default).
	resolve     string
	resolveExit int
	report      string
	// pins are what each pin gives asked alone, by name; otherPins is what
	// the pins not named give (nil: they resolve, to the file report
	// names).
	pins      map[string]fakePin
	otherPins *fakePin
	pipDebug  string // pip's output with -vv

	pipOut    string // the install's output
	pipFails  bool   // the install exits 1
	pipSleep  string // seconds the install takes
	badImport bool   // `import paddle` fails
	noPS      bool   // paddle lacks the parameter-server runtime
}

// fakePin is what pip gives for one pin asked alone: it fails with out;
// asked for any wheel ignoring Requires-Python it prints anyOut and, when
// anyReport (a file of testdata/pip) is set, succeeds writing it.
type fakePin struct{ out, anyOut, anyReport string }

// pipTestdata is a file of testdata/pip.
func pipTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "pip", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pinsFrom reads a directory of testdata/pip that says, for each pin that
// failed alone, what it gave (NAME.out, NAME-any.out, NAME-any.json).
func pinsFrom(t *testing.T, dir string) map[string]fakePin {
	t.Helper()
	outs, _ := filepath.Glob(filepath.Join("testdata", "pip", dir, "*.out"))
	pins := map[string]fakePin{}
	for _, out := range outs {
		name := strings.TrimSuffix(filepath.Base(out), ".out")
		if name == "resolve" || strings.HasSuffix(name, "-any") {
			continue
		}
		p := fakePin{out: pipTestdata(t, filepath.Join(dir, name+".out")), anyOut: pipTestdata(t, filepath.Join(dir, name+"-any.out"))}
		if _, err := os.Stat(filepath.Join("testdata", "pip", dir, name+"-any.json")); err == nil {
			p.anyReport = filepath.Join(dir, name+"-any.json")
		}
		pins[name] = p
	}
	if len(pins) == 0 {
		t.Fatalf("testdata/pip/%s holds no pin's output", dir)
	}
	return pins
}

const fakeScript = `#!/bin/sh
# A stand-in for python3 in paddleruntime's tests.
F=FAKEDIR
pinrun() { # NAME alone|any: what pip gives for one pin
	d="$F/pins/$1"
	[ -d "$d" ] || d="$F/pins/_other"
	if [ ! -d "$d" ]; then # it resolves
		[ "$2" = any ] && cp "$F/any.json" "$report"
		exit 0
	fi
	if [ "$2" = alone ]; then cat "$d/out"; exit 1; fi
	cat "$d/any.out"
	if [ -f "$d/any.json" ]; then cp "$d/any.json" "$report"; exit 0; fi
	exit 1
}
case "$1 $2" in
"-m venv")
	mkdir -p "$3/bin" && ln -s "BASE/bin/python3" "$3/bin/python3" && ln -s python3 "$3/bin/python" &&
	echo "home = BASE/bin" > "$3/pyvenv.cfg" ;;
"-m pip")
	echo "$*" >> "$F/pip.log"
	report= req= prev= last=
	for a in "$@"; do
		[ "$prev" = --report ] && report=$a
		[ "$prev" = -r ] && req=$a
		prev=$a last=$a
	done
	case "$*" in
	*-vv*) cat "$F/debug.out"; exit 1 ;;
	*--ignore-requires-python*) pinrun "${last%%==*}" any ;;
	*paddlejob-pin.txt*) pinrun "$(sed -n '1s/==.*//p' "$req")" alone ;;
	*paddlejob-pip.txt*) cat "$F/upgrade.out"; exit UPGRADEEXIT ;;
	*--dry-run*)
		echo "fake python: a dry run of the whole set: $*" >&2; exit 2 ;;
	esac
	if [ RESOLVEEXIT != 0 ]; then cat "$F/resolve.out"; exit RESOLVEEXIT; fi
	sleep PIPSLEEP
	cat "$F/install.out"
	[ PIPEXIT = 0 ] && [ -n "$report" ] && cp "$F/resolve.json" "$report"
	exit PIPEXIT ;;
-c*importlib.metadata*)
	echo PIPVERSION ;;
-c*import\ paddle*)
	if [ IMPORTEXIT != 0 ]; then echo "ModuleNotFoundError: No module named 'paddle'" >&2; exit 1; fi
	prefix=$(cd "$(dirname "$0")/.." && pwd -P)
	echo "some notice paddle prints first"
	echo '{"paddle": "PADDLE", "ps": HASPS, "version": "VERSION", "prefix": "'"$prefix"'", "basePrefix": "BASE", "baseExecPrefix": "BASE"}' ;;
-c*'"basePrefix": sys.base_prefix'*)
	prefix=$(cd "$(dirname "$0")/.." && pwd -P)
	echo '{"version": "VERSION", "prefix": "'"$prefix"'", "basePrefix": "BASE", "baseExecPrefix": "BASE"}' ;;
-c*)
	echo '{"version": "VERSION", "sysVersion": "VERSION (fake)", "implementation": "cpython", "basePrefix": "BASE", "baseExecPrefix": "BASE", "executable": "BASE/bin/python3", "ensurepip": ENSUREPIP, "platform": "linux-x86_64"}' ;;
*)
	echo "fake python: unexpected arguments: $*" >&2; exit 2 ;;
esac
`

// write installs the fake as base/bin/python3 and returns its path and the
// file pip's runs are logged to, one line of arguments each.
func (f fake) write(t *testing.T, base string) (python, pipLog string) {
	t.Helper()
	if f.version == "" {
		f.version = "3.11.7"
	}
	if f.paddle == "" {
		f.paddle = "3.0.0"
	}
	if f.pipVersion == "" {
		f.pipVersion = "23.2.1"
	}
	if f.report == "" {
		f.report = "report-3.0.0-cp311.json"
	}
	if f.pipSleep == "" {
		f.pipSleep = "0"
	}
	dir := filepath.Join(base, "fake")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	// A pin that resolves to any wheel is found in the set's report.
	files := map[string]string{"resolve.out": f.resolve, "debug.out": f.pipDebug, "install.out": f.pipOut, "upgrade.out": f.upgradeOut, "any.json": pipTestdata(t, f.report)}
	if f.resolveExit == 0 {
		files["resolve.json"] = pipTestdata(t, f.report)
	}
	pins := f.pins
	if f.otherPins != nil {
		pins = map[string]fakePin{"_other": *f.otherPins}
		for name, p := range f.pins {
			pins[name] = p
		}
	}
	for name, p := range pins {
		files[filepath.Join("pins", name, "out")] = p.out
		files[filepath.Join("pins", name, "any.out")] = p.anyOut
		if p.anyReport != "" {
			files[filepath.Join("pins", name, "any.json")] = pipTestdata(t, p.anyReport)
		}
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exit := map[bool]string{false: "0", true: "1"}
	script := strings.NewReplacer(
		"FAKEDIR", dir, "BASE", base, "PIPSLEEP", f.pipSleep, "RESOLVEEXIT", itoa(f.resolveExit),
		"PIPEXIT", exit[f.pipFails], "IMPORTEXIT", exit[f.badImport], "PADDLE", f.paddle, "HASPS", map[bool]string{false: "false", true: "true"}[!f.noPS],
		"VERSION", f.version, "ENSUREPIP", map[bool]string{false: "true", true: "false"}[f.noPip], "PIPVERSION", f.pipVersion,
		"UPGRADEEXIT", exit[f.upgradeOut != ""],
	).Replace(fakeScript)
	python = filepath.Join(base, "bin", "python3")
	if err := os.MkdirAll(filepath.Dir(python), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(python, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return python, filepath.Join(dir, "pip.log")
}

func itoa(n int) string { return string(rune('0' + n)) }

// pipRuns are the argument lines of every pip run the fake logged.
func pipRuns(t *testing.T, pipLog string) []string {
	t.Helper()
	b, err := os.ReadFile(pipLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// pipInstalls counts the installs of the pinned set.
func pipInstalls(t *testing.T, pipLog string) int {
	t.Helper()
	n := 0
	for _, run := range pipRuns(t, pipLog) {
		if strings.Contains(run, "paddlejob-requirements.txt") {
			n++
		}
	}
	return n
}

// tempDir is t.TempDir with symlinks resolved, as the runtime reports paths.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
