package paddleruntime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pip resolves the pins in a dry run, and only then installs them; the
// report of the dry run stays in the runtime.
func TestEnsureResolvesFirst(t *testing.T) {
	base, cache := tempDir(t), tempDir(t)
	python, pipLog := fake{}.write(t, base)
	rt, err := Ensure(context.Background(), Options{CacheDir: cache, Python: python})
	if err != nil {
		t.Fatal(err)
	}
	runs := pipRuns(t, pipLog)
	if len(runs) != 2 || !strings.Contains(runs[0], "install --no-deps --progress-bar off --dry-run --ignore-installed --report "+filepath.Join(rt.Dir, pipReportName)+" --require-hashes -r ") ||
		strings.Contains(runs[1], "--dry-run") {
		t.Errorf("pip ran %q; want a dry run with a report, then the install", runs)
	}
	r, err := readPipReport(filepath.Join(rt.Dir, pipReportName))
	if err != nil || r.checkResolves(pins) != nil {
		t.Errorf("the runtime's %s: %+v, %v", pipReportName, r, err)
	}
	logs, _ := filepath.Glob(filepath.Join(cache, "paddle-runtime", "*.log"))
	if b, _ := os.ReadFile(logs[0]); !strings.Contains(string(b), "pip resolves the 19 pins for Python 3.11.7 (cpython) on linux x86_64") {
		t.Errorf("the install's log does not say what pip resolved:\n%s", b)
	}
}

// A venv whose pip predates --report (Ubuntu 22.04's python3.11-venv
// bundles 22.0.2) gets the pinned pip first.
func TestEnsureUpgradesAnOldPip(t *testing.T) {
	base, cache := tempDir(t), tempDir(t)
	python, pipLog := fake{pipVersion: "22.0.2"}.write(t, base)
	if _, err := Ensure(context.Background(), Options{CacheDir: cache, Python: python}); err != nil {
		t.Fatal(err)
	}
	runs := pipRuns(t, pipLog)
	if len(runs) != 3 || !strings.Contains(runs[0], "--require-hashes -r ") || !strings.HasSuffix(runs[0], "/paddlejob-pip.txt") || !strings.Contains(runs[1], "--dry-run") {
		t.Errorf("pip ran %q; want pip upgraded from pip.txt, then the dry run and the install", runs)
	}
	if pinnedPip.reqs[0].spec() != "pip==24.2" || CompareVersions(pinnedPip.reqs[0].version, minReportPip) < 0 {
		t.Errorf("pip.txt pins %s; want a pip with --report (%s or later)", pinnedPip.reqs[0].spec(), minReportPip)
	}

	python, pipLog = fake{}.write(t, tempDir(t))
	if _, err := Ensure(context.Background(), Options{CacheDir: tempDir(t), Python: python}); err != nil {
		t.Fatal(err)
	}
	for _, run := range pipRuns(t, pipLog) {
		if strings.Contains(run, "paddlejob-pip.txt") {
			t.Errorf("pip 23.2.1 was upgraded: %q", run)
		}
	}
}

func TestEnsureOldPipUpgradeFails(t *testing.T) {
	checkEnsureFails(t, ensureFailureCase{
		fake:    fake{pipVersion: "22.0.2", upgradeOut: pipTestdata(t, "resolve-refused-retries0.out")},
		want:    []string{"the venv's pip 22.0.2 predates `pip install --dry-run --report` (pip 22.2), and upgrading it to pip==24.2 failed (exit status 1): pip says:", "No matching distribution found"},
		wantLog: true,
	})
}
