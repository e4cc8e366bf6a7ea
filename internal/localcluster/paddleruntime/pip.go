package paddleruntime

// Installing a pinned set with pip: one `pip install --report`, whose
// report (JSON) says what pip installed. Why a run failed is decided in
// pipfailure.go.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed pip.txt
var pipRequirements []byte

// pinnedPip is the pip a venv whose pip has no --report is upgraded to.
var pinnedPip = func() pinSet {
	p, err := parseRequirements(pipRequirements)
	if err != nil || len(p.reqs) != 1 || !p.hashed {
		panic(fmt.Sprintf("pip.txt: want one hashed pin: %v", err))
	}
	return p
}()

// pipInstall is `python -m pip install` with what every run of it here
// takes, then args.
func pipInstall(args ...string) []string {
	return append([]string{"-m", "pip", "install", "--no-deps", "--progress-bar", "off"}, args...)
}

// pipExitError is pip's exit code for an error it reports (a requirement
// it cannot resolve, a hash that does not match, an OS error); an
// unexpected exception exits 2.
const pipExitError = 1

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// installPins installs the pins into the venv at dir, whose interpreter is
// python, in one pip run (paddle's wheel is about 200 MB: a dry run first
// would download it twice wherever pip's HTTP cache does not serve it). Its
// report says what pip installed; only a failed install asks pip about
// each pin alone (pipfailure.go).
func (in *installer) installPins(ctx context.Context, dir, python string) error {
	if err := in.ensureReportPip(ctx, dir, python); err != nil {
		return err
	}
	req := filepath.Join(dir, "paddlejob-requirements.txt")
	if err := os.WriteFile(req, in.pins.raw, 0o644); err != nil {
		return err
	}
	report := filepath.Join(dir, pipReportName)
	args := []string{"--report", report}
	if in.pins.hashed {
		args = append(args, "--require-hashes")
	}
	if out, err := in.run(ctx, python, pipInstall(append(args, "-r", req)...)...); err != nil {
		return in.installFailure(ctx, python, dir, err, out)
	}
	r, err := readPipReport(report)
	if err == nil {
		err = r.checkResolves(in.pins)
	}
	if err != nil {
		return fmt.Errorf("installing %s: %w\n(full output: %s)", in.pins.label(), err, in.logPath)
	}
	fmt.Fprintf(in.logFile, "pip installed the %d pins for %s\n", len(in.pins.reqs), r.environment())
	return nil
}

// ensureReportPip upgrades the venv's pip to pinnedPip when it predates
// --report.
func (in *installer) ensureReportPip(ctx context.Context, dir, python string) error {
	v, err := pipVersion(ctx, python)
	if err != nil {
		return err
	}
	if CompareVersions(v, minReportPip) >= 0 {
		return nil
	}
	to := pinnedPip.reqs[0].spec()
	fmt.Fprintf(in.logFile, "\nthe venv's pip %s predates `pip install --dry-run --report` (pip %s): upgrading it to %s\n", v, minReportPip, to)
	req := filepath.Join(dir, "paddlejob-pip.txt")
	if err := os.WriteFile(req, pipRequirements, 0o644); err != nil {
		return err
	}
	if out, err := in.run(ctx, python, pipInstall("--require-hashes", "-r", req)...); err != nil {
		if err := in.noSpaceError(out); err != nil {
			return err
		}
		return fmt.Errorf("the venv's pip %s predates `pip install --dry-run --report` (pip %s), and upgrading it to %s failed (%v): pip says%s\n(full output: %s)",
			v, minReportPip, to, err, indent(lastLines(out, 3)), in.logPath)
	}
	return nil
}
