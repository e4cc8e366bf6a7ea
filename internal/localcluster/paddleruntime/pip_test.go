package paddleruntime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The pins are installed in one pip run, no dry run first (that would
// download paddle's wheel twice); the run's report stays in the runtime.
func TestEnsureInstallsInOnePipRun(t *testing.T) {
	base, cache := tempDir(t), tempDir(t)
	python, pipLog := fake{}.write(t, base)
	rt, err := Ensure(context.Background(), Options{CacheDir: cache, Python: python})
	if err != nil {
		t.Fatal(err)
	}
	runs := pipRuns(t, pipLog)
	if len(runs) != 1 || runs[0] != "-m pip install --no-deps --progress-bar off --report "+filepath.Join(rt.Dir, pipReportName)+" --require-hashes -r "+filepath.Join(rt.Dir, "paddlejob-requirements.txt") {
		t.Errorf("pip ran %q; want one install with a report", runs)
	}
	r, err := readPipReport(filepath.Join(rt.Dir, pipReportName))
	if err != nil || r.checkResolves(pins) != nil {
		t.Errorf("the runtime's %s: %+v, %v", pipReportName, r, err)
	}
	logs, _ := filepath.Glob(filepath.Join(cache, "paddle-runtime", "*.log"))
	if b, _ := os.ReadFile(logs[0]); !strings.Contains(string(b), "pip installed the 19 pins for Python 3.11.7 (cpython) on linux x86_64") {
		t.Errorf("the install's log does not say what pip installed:\n%s", b)
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
	if len(runs) != 2 || !strings.Contains(runs[0], "--require-hashes -r ") || !strings.HasSuffix(runs[0], "/paddlejob-pip.txt") || !strings.HasSuffix(runs[1], "/paddlejob-requirements.txt") {
		t.Errorf("pip ran %q; want pip upgraded from pip.txt, then the install", runs)
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
