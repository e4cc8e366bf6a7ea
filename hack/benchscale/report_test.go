package main

import (
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	in := []float64{3, 1, 2}
	median(in)
	if in[0] != 3 {
		t.Error("median sorted its input")
	}
}

func TestParseCPUInfo(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n"
	model, n := parseCPUInfo(info)
	if model != "Intel(R) Xeon(R) Processor" || n != 2 {
		t.Errorf("got %q, %d", model, n)
	}
}

func TestNum(t *testing.T) {
	for in, want := range map[float64]string{4: "4", 4.5: "4.50", 1234.4: "1234", 0.125: "0.12"} {
		if got := num(in); got != want {
			t.Errorf("num(%v) = %q, want %q", in, got, want)
		}
	}
}

func testReport() report {
	ops := func(pods, status float64) requestCounts {
		return requestCounts{
			{Verb: "POST", Resource: "pods"}:                             pods,
			{Verb: "PUT", Resource: "paddlejobs", Subresource: "status"}: status,
			{Verb: "GET", Resource: "pods"}:                              1,
		}
	}
	run := func(created, direct, running float64, o requestCounts) runResult {
		return runResult{
			AllCreated: time.Duration(created * float64(time.Second)), Direct: time.Duration(direct * float64(time.Second)),
			Running: time.Duration(running * float64(time.Second)), JobsCreated: 200 * time.Millisecond,
			Ops: o, OpsKnown: true, CPU: 1500 * time.Millisecond, PeakRSS: 100 << 20,
			ControlPlaneCPU:       map[string]time.Duration{"kube-apiserver": 3 * time.Second, "etcd": time.Second},
			DirectControlPlaneCPU: map[string]time.Duration{"kube-apiserver": 800 * time.Millisecond, "etcd": time.Second},
			HarnessCPU:            250 * time.Millisecond,
			PodBytes:              3072, DirectPodBytes: 1024,
		}
	}
	return report{
		Date:         time.Date(2025, 3, 4, 5, 6, 0, 0, time.UTC),
		Machine:      machine{CPUModel: "Test CPU", CPUs: 2, MemoryGiB: 23.5, Kernel: "6.1.0", Go: "go1.26.0", LoadAvg: "1.00 2.00 3.00"},
		ControlPlane: "envtest",
		Operator:     "op",
		Settings:     "harness",
		Runs:         3,
		Rows: []row{{
			Scenario: scenario{Name: "100 jobs × 4 pods", Jobs: 100, PS: 2, Workers: 2},
			Runs: []runResult{
				run(1.0, 0.5, 2.0, ops(400, 200)),
				run(3.0, 0.4, 4.0, ops(400, 300)),
				run(2.0, 0.6, 3.0, ops(400, 250)),
			},
		}},
	}
}

func TestFormatReport(t *testing.T) {
	var b strings.Builder
	formatReport(&b, testReport())
	out := b.String()
	for _, want := range []string{
		"Measured 2025-03-04 05:06 UTC on Test CPU (2 CPUs), 23.5 GiB memory, Linux 6.1.0, go1.26.0; load average at start 1.00 2.00 3.00.",
		"median of 3 runs",
		"| scenario | pods | operator: all pods created (s) | direct (s) | ratio |",
		// medians: created 2.0, direct 0.5, running 3.0; writes 4 + 2.5, plus one GET per job.
		"| 100 jobs × 4 pods | 400 | 2.00 | 0.50 | 4.00 | 3.00 | 6.50 | 6.51 | 1.50 | 100 |",
		"| 100 jobs × 4 pods | 0.20 | 3.00 | 1.00 | 0.25 | 0.80 | 3.0 / 1.0 | POST pods 4, PUT paddlejobs/status 2.50, GET pods 0.01 |",
		"- 100 jobs × 4 pods: 1.00 / 0.50 / 2.00; 3.00 / 0.40 / 4.00; 2.00 / 0.60 / 3.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Stopped early") || strings.Contains(out, "*") {
		t.Errorf("unexpected footnote or failure:\n%s", out)
	}
}

func TestFormatReportUnknowns(t *testing.T) {
	rep := testReport()
	rep.Runs = 1
	r := rep.Rows[0].Runs[0]
	r.OpsKnown, r.Ops, r.PeakIsLifetime, r.Direct, r.ControlPlaneCPU, r.DirectControlPlaneCPU = false, nil, true, 0, nil, nil
	rep.Rows[0].Runs = []runResult{r}
	rep.Failure = "1000 jobs × 4 pods: waiting for all pods created: timed out"
	var b strings.Builder
	formatReport(&b, rep)
	out := b.String()
	for _, want := range []string{
		"| 100 jobs × 4 pods | 400 | 1.00 | 0.00 | n/a | 2.00 | n/a | n/a | 1.50 | 100* |",
		"| 100 jobs × 4 pods | 0.20 | n/a | n/a | 0.25 | n/a | 3.0 / 1.0 | n/a |",
		"peak over the operator's life",
		"**Stopped early:** 1000 jobs × 4 pods: waiting for all pods created: timed out",
		"each number: one run",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestFormatReportRequestCosts(t *testing.T) {
	rep := testReport()
	rep.CostRequests = 400
	rep.Costs = []requestCost{{"create PaddleJob", 6250 * time.Microsecond}, {"create pod: plain", 1500 * time.Microsecond}}
	var b strings.Builder
	formatReport(&b, rep)
	out := b.String()
	for _, want := range []string{
		"each kind sent 400 times alone",
		"| create PaddleJob | 6.25 |",
		"| create pod: plain | 1.50 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	formatReport(&b, testReport())
	if strings.Contains(b.String(), "per request") {
		t.Errorf("a report without costs has their table:\n%s", b.String())
	}
}
