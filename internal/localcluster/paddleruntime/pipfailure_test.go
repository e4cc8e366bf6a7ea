package paddleruntime

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// How a failed pip run is explained, from what real pip printed and
// reported (testdata/pip) in each case.
func TestEnsurePipFailures(t *testing.T) {
	for _, tt := range append(resolveFailures(t), installFailures(t)...) {
		t.Run(tt.name, func(t *testing.T) { checkEnsureFails(t, tt) })
	}
}

// resolveFailures are the ways pip's install of the pins fails while it
// resolves them.
func resolveFailures(t *testing.T) []ensureFailureCase {
	refused := pipTestdata(t, "resolve-refused.out")
	retries0 := pipTestdata(t, "resolve-refused-retries0.out")
	// Pin sets whose `# python:` line claims an interpreter their wheels do
	// not cover, so that the interpreter gets past the declared range to
	// pip: what the check with pip's report exists for.
	claims310 := bytes.Replace(embeddedRequirements, []byte("# python: 3.11-3.13"), []byte("# python: 3.10-3.13"), 1)
	claims313 := bytes.Replace(mustReadPins("paddle-2.6.2.txt"), []byte("# python: 3.11-3.12"), []byte("# python: 3.11-3.13"), 1)
	return []ensureFailureCase{
		{
			name: "index unreachable", fake: fake{resolve: refused, resolveExit: 1, otherPins: &fakePin{out: refused, anyOut: refused}}, wantIs: ErrIndexUnreachable,
			want:    []string{"cannot reach the Python package index to install the Paddle runtime (pip resolves none of the 19 pins, any wheel allowed): pip says:", "Connection refused", "No matching distribution found for paddlepaddle==3.0.0"},
			wantLog: true,
		},
		{
			name: "no DNS", fake: fake{resolve: pipTestdata(t, "resolve-no-dns.out"), resolveExit: 1, otherPins: &fakePin{}}, wantIs: ErrIndexUnreachable,
			want: []string{"cannot reach the Python package index", "Name or service not known"}, wantLog: true,
		},
		{
			// With retries=0 pip says nothing of the network: no pin
			// resolves alone, nor to any wheel, and pip -vv says why.
			name: "index unreachable, pip not retrying", wantIs: ErrIndexUnreachable,
			fake:    fake{resolve: retries0, resolveExit: 1, otherPins: &fakePin{out: retries0, anyOut: retries0}, pipDebug: pipTestdata(t, "pin-refused-retries0-vv.out")},
			want:    []string{"cannot reach the Python package index to install the Paddle runtime (pip resolves none of the 19 pins, any wheel allowed): pip says:\n\tCould not fetch URL", "Could not fetch URL http://127.0.0.1:9/simple/paddlepaddle/: connection error"},
			wantLog: true,
		},
		{
			name: "pins without wheels for CPython 3.10", pins: claims310, wantIs: ErrUnsupportedPython,
			fake: fake{version: "3.10.13", resolve: pipTestdata(t, "cp310-paddle-3.0.0/resolve.out"), resolveExit: 1, pins: pinsFrom(t, "cp310-paddle-3.0.0")},
			want: []string{
				"pip cannot install these pins for CPython 3.10.13 on linux-x86_64 (", "(each asked about alone):\n",
				"\tpaddlepaddle==3.0.0: pip would install paddlepaddle-3.0.0-cp310-cp310-manylinux1_x86_64.whl here (sha256 73b1349d91a8...), a file the pins do not list",
				"\tgrpcio==1.85.1: pip would install grpcio-1.85.1-cp310-cp310-manylinux2014_x86_64.manylinux_2_17_x86_64.whl here",
				"\tnetworkx==3.6.1: its pinned wheel networkx-3.6.1-py3-none-any.whl requires Python !=3.14.1,>=3.11",
				"\tnumpy==2.4.6: the index has no wheel of it for this interpreter",
				"\tpillow==13.0.0: the index has no wheel of it for this interpreter",
				"install one of those and name it as the interpreter",
			},
			wantLog: true,
		},
		{
			// A retried connection, then pip read the index: the pins, not
			// the network, are why.
			name: "pins without wheels for CPython 3.10, after a retry", pins: claims310, wantIs: ErrUnsupportedPython,
			fake: fake{version: "3.10.13", resolve: strings.SplitAfter(refused, "\n")[2] + pipTestdata(t, "cp310-paddle-3.0.0/resolve.out"), resolveExit: 1, pins: pinsFrom(t, "cp310-paddle-3.0.0")},
			want: []string{"networkx==3.6.1: its pinned wheel networkx-3.6.1-py3-none-any.whl requires Python !=3.14.1,>=3.11"},
		},
		{
			name: "2.6.2's pins on CPython 3.13", pins: claims313, wantIs: ErrUnsupportedPython,
			fake: fake{version: "3.13.0", paddle: "2.6.2", resolve: pipTestdata(t, "cp313-paddle-2.6.2/resolve.out"), resolveExit: 1, pins: pinsFrom(t, "cp313-paddle-2.6.2")},
			want: []string{
				"\tpaddlepaddle==2.6.2: the index has no wheel of it for this interpreter",
				"\tnumpy==2.4.6: pip would install numpy-2.4.6-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl here (sha256 a7830bab239b...), a file the pins do not list",
				"\tpillow==13.0.0: pip would install pillow-13.0.0-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl here",
				"paddlepaddle 2.6.2 and its pinned dependencies have wheels for Linux x86_64, CPython 3.11-3.13 only",
			},
		},
		{
			name: "each pin resolves alone", fake: fake{resolve: pipTestdata(t, "install-bad-wheel.out"), resolveExit: 1},
			want: []string{"installing the Paddle runtime: pip failed (exit status 1); pip says:", "is invalid"}, wantLog: true,
		},
		{
			name: "pip crashes while it resolves", fake: fake{resolve: pipTestdata(t, "report-pip-22.0.2.out"), resolveExit: 2},
			want: []string{"pip failed (exit status 2)", "no such option: --dry-run"}, wantLog: true,
		},
	}
}

// installFailures are the ways pip's install of pins it resolved fails
// later.
func installFailures(t *testing.T) []ensureFailureCase {
	return []ensureFailureCase{
		{
			name: "a download fills the disk", fake: fake{pipFails: true, pipOut: pipTestdata(t, "install-enospc-download.out")},
			want: []string{"no space left to install the Paddle runtime: a filesystem pip writes to filled up while it wrote", "OSError(28, 'No space left on device')"}, wantLog: true,
		},
		{
			name: "a downloaded file has a hash the pins do not list", fake: fake{pipFails: true, pipOut: pipTestdata(t, "install-hash-mismatch.out")},
			want: []string{"a file pip downloaded has a sha256 the pins do not list", "Got        4721f391ed90"}, wantLog: true,
		},
		{
			name: "the index went away during the install", wantIs: ErrIndexUnreachable,
			fake: fake{pipFails: true, pipOut: pipTestdata(t, "resolve-refused.out"), otherPins: &fakePin{anyOut: pipTestdata(t, "resolve-refused-retries0.out")}},
			want: []string{"cannot reach the Python package index", "Connection refused"}, wantLog: true,
		},
		{
			name: "pip fails otherwise", fake: fake{pipFails: true, pipOut: pipTestdata(t, "install-bad-wheel.out")},
			want: []string{"pip failed (exit status 1)", "is invalid"}, wantLog: true,
		},
	}
}

// The disk is read with statfs before and after pip runs.
func TestEnsureNoSpace(t *testing.T) {
	defer func(f func(string) (fsFree, error)) { statFree = f }(statFree)
	real := statFree
	full := func(string) (fsFree, error) { return fsFree{bytes: 0, inodes: 1000, files: 2000}, nil }
	f := fake{pipFails: true, pipOut: pipTestdata(t, "install-enospc.out")}
	base, cache := tempDir(t), tempDir(t)
	root := filepath.Join(cache, "paddle-runtime")
	python, pipLog := f.write(t, base)
	// The cache's disk fills once pip installs (the tmpfs of
	// install-enospc.out had 0 bytes free after).
	statFree = func(dir string) (fsFree, error) {
		if dir == root && pipInstalls(t, pipLog) > 0 {
			return full(dir)
		}
		return real(dir)
	}
	_, err := Ensure(t.Context(), Options{CacheDir: cache, Python: python})
	for _, want := range []string{"no space left to install the Paddle runtime: the filesystem of the cache " + root + " has 0 KiB free", "$PADDLEJOB_CACHE", "[Errno 28] No space left on device"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Ensure = %v; want an error containing %q", err, want)
		}
	}

	// Full from the start: refused before pip runs.
	statFree = full
	python, pipLog = f.write(t, tempDir(t))
	_, err = Ensure(t.Context(), Options{CacheDir: tempDir(t), Python: python})
	if err == nil || !strings.Contains(err.Error(), "no space left to install the Paddle runtime: the filesystem of the cache") || len(pipRuns(t, pipLog)) != 0 {
		t.Errorf("Ensure on a full disk = %v after pip ran %q; want it refused before pip", err, pipRuns(t, pipLog))
	}
	if errors.Is(err, ErrIndexUnreachable) {
		t.Errorf("%v is not a network error", err)
	}
}
