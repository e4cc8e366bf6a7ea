package paddleruntime

import (
	"slices"
	"strings"
	"testing"
)

// Real reports (testdata/pip) read as the pins they were resolved from.
func TestPipReport(t *testing.T) {
	p300, err := pinsOf("3.0.0")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parsePipReport([]byte(pipTestdata(t, "report-3.0.0-cp311.json")))
	if err != nil {
		t.Fatal(err)
	}
	if r.PipVersion != "23.2.1" || len(r.Install) != len(p300.reqs) {
		t.Errorf("report of pip %s with %d items; want pip 23.2.1 and the %d pins", r.PipVersion, len(r.Install), len(p300.reqs))
	}
	if err := r.checkResolves(p300); err != nil {
		t.Errorf("the 3.0.0 pins' own report: %v", err)
	}
	if got, want := r.environment(), "Python 3.11.7 (cpython) on linux x86_64"; got != want {
		t.Errorf("environment() = %q; want %q", got, want)
	}
	// Each file pip picked is one the pins list (pip checked them under
	// --require-hashes), so the report's hashes are the pins'.
	for _, req := range p300.reqs {
		it := r.item(req)
		if it == nil || !slices.Contains(req.hashes, it.sha256()) {
			t.Errorf("%s: report item %+v; want a file whose sha256 the pins list", req.spec(), it)
		}
	}
	if it := r.item(p300.reqs[0]); it.file() != "paddlepaddle-3.0.0-cp311-cp311-manylinux1_x86_64.whl" {
		t.Errorf("paddlepaddle's file = %q", it.file())
	}

	// 3.3.1's report does not resolve the 3.0.0 pins.
	r331, err := parsePipReport([]byte(pipTestdata(t, "report-3.3.1-cp311.json")))
	if err != nil {
		t.Fatal(err)
	}
	err = r331.checkResolves(p300)
	for _, want := range []string{"does not hold paddlepaddle==3.0.0 (it has 3.3.1)", "etcd3==0.12.0 (not in it)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("3.3.1's report for the 3.0.0 pins: %v; want %q", err, want)
		}
	}
}

func TestParsePipReportRefuses(t *testing.T) {
	for _, tc := range []struct{ name, report, want string }{
		{"not JSON", "Usage: pip install [options]", "not JSON"},
		{"another format", `{"version": "2", "pip_version": "30.1", "install": []}`, `pip 30.1 writes its report in format "2"; paddlejob reads formats 0 and 1`},
		{"no format", `{"install": []}`, `format ""`},
	} {
		if _, err := parsePipReport([]byte(tc.report)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: parsePipReport = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := parsePipReport([]byte(`{"version": "0", "pip_version": "22.2", "install": []}`)); err != nil {
		t.Errorf("pip 22.2's format 0: %v", err)
	}
}

func TestCanonicalName(t *testing.T) {
	for name, want := range map[string]string{
		"typing_extensions": "typing-extensions", "opt-einsum": "opt-einsum", "Opt.Einsum": "opt-einsum",
		"PaddlePaddle": "paddlepaddle", "zope__.interface": "zope-interface",
	} {
		if got := canonicalName(name); got != want {
			t.Errorf("canonicalName(%q) = %q; want %q", name, got, want)
		}
	}
}
