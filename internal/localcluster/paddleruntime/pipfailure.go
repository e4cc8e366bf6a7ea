package paddleruntime

// Why a pip run failed, decided from what is structured: pip's exit code,
// its report, statfs (space.go) and pip asked about one pin at a time.
// pip's words are read only where it says nothing structured (a hash that
// does not match, ENOSPC that statfs no longer sees), and each such place
// says so.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// installFailure tells why pip failed to install the pins in the venv at
// dir: from the disk, whether the index answers, and, when pip reports an
// error (exit 1), pip asked about each pin alone; pip's words only where it
// has nothing else (a hash that does not match).
func (in *installer) installFailure(ctx context.Context, python, dir string, err error, out string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("installing %s: %w", in.pins.label(), ctx.Err())
	}
	if err := in.noSpaceError(out); err != nil {
		return err
	}
	if !in.anyPinResolves(ctx, python, dir) { // pip could not read the index, or a download broke off and the index is gone
		return in.unreachable(ctx, python, out)
	}
	if exitCode(err) != pipExitError { // not an error pip reports: pip crashed
		return in.pipFailed(err, out)
	}
	// A wheel for another interpreter fails its hash check too, so the
	// pins are asked about before pip's words are read.
	verdicts, askErr := in.askEachPin(ctx, python, dir)
	switch {
	case askErr != nil:
		return askErr
	case len(verdicts) > 0:
		return in.unsupported(verdicts)
	case strings.Contains(out, "DO NOT MATCH THE HASHES"):
		// pip reports a downloaded file whose sha256 the pins do not list
		// only in words; each pin resolving alone, the file changed (a
		// mirror, or an index listing files without their hashes).
		return fmt.Errorf("installing %s: a file pip downloaded has a sha256 the pins do not list (they cover the wheels of Linux x86_64, %s: a mirror serving other files, or another platform): pip says%s\n(full output: %s)",
			in.pins.label(), in.pins.pythonRange(), indent(lastLines(out, 3)), in.logPath)
	}
	return in.pipFailed(err, out) // each pin resolves alone: not a pin's fault
}

func (in *installer) pipFailed(err error, out string) error {
	return fmt.Errorf("installing %s: pip failed (%v); pip says%s\n(full output: %s)", in.pins.label(), err, indent(lastLines(out, 3)), in.logPath)
}

// unreachable is the error of an index pip resolves nothing from. It
// quotes why pip could not fetch it, which pip logs only at debug level (or
// not at all without retries), else pip's last words.
func (in *installer) unreachable(ctx context.Context, python, out string) error {
	quote := lastLines(out, 3)
	if fetch := in.fetchFailure(ctx, python, in.pins.reqs[0]); fetch != "" {
		quote = append([]string{fetch}, lastLines(out, 1)...)
	}
	return fmt.Errorf("%w to install %s (pip resolves none of the %d pins, any wheel allowed): pip says%s\n(full output: %s; pip's PIP_INDEX_URL or pip.conf can name a mirror, HTTPS_PROXY a proxy)",
		ErrIndexUnreachable, in.pins.label(), len(in.pins.reqs), indent(quote), in.logPath)
}

// pinVerdict is why pip cannot install one pin here, from pip asked about
// it alone.
type pinVerdict struct {
	req pin
	// file is what pip picks for it when it may take any wheel and
	// ignore Requires-Python; "" when it finds none. pinned: the pins list
	// file's sha256 (or list none for the pin).
	file, sha256 string
	pinned       bool
	// requiresPython is file's Requires-Python: pip refused the pinned
	// file for it.
	requiresPython string
}

func (v pinVerdict) String() string {
	switch {
	case v.file == "":
		return v.req.spec() + ": the index has no wheel of it for this interpreter"
	case !v.pinned:
		return fmt.Sprintf("%s: pip would install %s here (sha256 %.12s...), a file the pins do not list", v.req.spec(), v.file, v.sha256)
	case v.requiresPython != "":
		return fmt.Sprintf("%s: its pinned wheel %s requires Python %s", v.req.spec(), v.file, v.requiresPython)
	}
	return fmt.Sprintf("%s: pip refuses its pinned wheel %s here unless told to ignore Requires-Python, which the wheel does not declare", v.req.spec(), v.file)
}

// unsupported is the error of pins pip cannot install for this
// interpreter and platform.
func (in *installer) unsupported(vs []pinVerdict) error {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.String()
	}
	return fmt.Errorf("%w: pip cannot install these pins for %s (each asked about alone)%s\n%s have wheels for Linux x86_64, %s only: install one of those and name it as the interpreter (on one of those, a file the pins do not list means a mirror serving other files)\n(full output: %s)",
		ErrUnsupportedPython, in.py.describe(in.python), indent(lines), in.pins.packages(), in.pins.pythonRange(), in.logPath)
}

// askEachPin asks pip to resolve each pin alone and, for those it cannot,
// why: the verdicts of the pins that do not resolve here.
func (in *installer) askEachPin(ctx context.Context, python, dir string) ([]pinVerdict, error) {
	var vs []pinVerdict
	for _, req := range in.pins.reqs {
		if in.resolvesAlone(ctx, python, dir, req) {
			continue
		}
		vs = append(vs, in.whyNot(ctx, python, dir, req))
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("installing %s: %w", in.pins.label(), ctx.Err())
	}
	return vs, nil
}

// anyPinResolves reports whether the index answers: whether pip, trying
// it once per pin, resolves a pin to any wheel for any Python (or the
// install is cancelled: the caller says so). pip says that it cannot reach
// an index only in words (its exit code is 1, and it writes no report, as
// for a requirement it cannot resolve). The last pins are tried first: the
// sets list paddlepaddle, the largest wheel, first.
func (in *installer) anyPinResolves(ctx context.Context, python, dir string) bool {
	if len(in.pins.reqs) == 0 {
		return true // nothing to ask: no verdict
	}
	for _, req := range slices.Backward(in.pins.reqs) {
		if v := in.whyNot(ctx, python, dir, req, "--retries", "0"); v.file != "" || ctx.Err() != nil {
			return true
		}
	}
	return false
}

// resolvesAlone reports whether pip resolves req, with its hashes, alone.
func (in *installer) resolvesAlone(ctx context.Context, python, dir string, req pin) bool {
	file := filepath.Join(dir, "paddlejob-pin.txt")
	if err := os.WriteFile(file, []byte(req.line+"\n"), 0o644); err != nil {
		return false
	}
	args := []string{"--dry-run", "--ignore-installed", "-r", file}
	if len(req.hashes) > 0 {
		args = append(args, "--require-hashes")
	}
	_, err := in.run(ctx, python, pipInstall(args...)...)
	return err == nil
}

// whyNot asks pip (with opts) which wheel it would pick for req were
// hashes and Requires-Python no object: none (no wheel for this
// interpreter), one the pins do not list, or a pinned one, refused for its
// Requires-Python.
func (in *installer) whyNot(ctx context.Context, python, dir string, req pin, opts ...string) pinVerdict {
	v := pinVerdict{req: req}
	report := filepath.Join(dir, "paddlejob-pin-report.json")
	os.Remove(report)
	args := append([]string{"--dry-run", "--ignore-installed", "--only-binary", ":all:", "--ignore-requires-python", "--report", report}, opts...)
	if _, err := in.run(ctx, python, pipInstall(append(args, req.spec())...)...); err != nil {
		return v
	}
	r, err := readPipReport(report)
	if err != nil {
		return v
	}
	it := r.item(req)
	if it == nil {
		return v
	}
	v.file, v.sha256, v.requiresPython = it.file(), it.sha256(), it.Metadata.RequiresPython
	v.pinned = len(req.hashes) == 0 || v.sha256 == "" || slices.Contains(req.hashes, v.sha256)
	return v
}

// fetchFailure returns, to quote, pip's line saying why it could not fetch
// the index page of req: pip logs it only at debug level (-vv).
func (in *installer) fetchFailure(ctx context.Context, python string, req pin) string {
	out, _ := in.run(ctx, python, pipInstall("--dry-run", "--retries", "0", "-vv", req.spec())...)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Could not fetch URL") {
			return lastLines(line, 1)[0]
		}
	}
	return ""
}
