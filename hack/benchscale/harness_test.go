//go:build integration

package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The whole harness, tiny: its own control plane, the operator built from
// this tree, one scenario of each kind with its direct reference, a job's
// restart and another's completion, and the request costs. What `make
// bench-scale` runs, at a size CI can afford.
func TestHarnessRunsEveryPart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.md")
	fs := flag.NewFlagSet("benchscale", flag.ContinueOnError)
	cfg := bindFlags(fs)
	if err := fs.Parse([]string{"--jobs", "2", "--pods", "3", "--restart-jobs", "1", "--complete-jobs", "1", "--request-costs", "10", "--out", out, "--timeout", "2m"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, want := range []*regexp.Regexp{
		// pods, then times: operator, direct, ratio, Running; writes/job.
		regexp.MustCompile(`\| 2 jobs × 4 pods \| 8 \| \d+\.\d\d \| \d+\.\d\d \| \d+\.\d\d \| \d+\.\d\d \| \d`),
		regexp.MustCompile(`\| 1 job × 3 workers \| 3 \| \d+\.\d\d \| \d+\.\d\d \| \d+\.\d\d \| \d+\.\d\d \| \d`),
		regexp.MustCompile(`POST pods 4, `),
		regexp.MustCompile(`\| create pod: the controller's \| \d+\.\d\d \|`),
		regexp.MustCompile(`\| update PaddleJob status \| \d+\.\d\d \|`),
		// The restart: one pod killed, the job's 4 pods deleted and made
		// again, the job Running with a restart counted.
		regexp.MustCompile(`\| 2 jobs × 4 pods, 1 \| restart \| 1 \| 1 \| \d+\.\d\d \| \d+\.\d\d \| [\d.]+ \([\d.]+\) \| \d+\.\d\d \(all Running again\) \|.*POST pods 4\b`),
		regexp.MustCompile(`\| 2 jobs × 4 pods, 1 \| complete \| 1 \| 4 \| \d+\.\d\d \| n/a \| n/a \| \d+\.\d\d \(all Completed\) \|`),
	} {
		if !want.MatchString(report) {
			t.Errorf("report lacks %s:\n%s", want, report)
		}
	}
	if strings.Contains(report, "Stopped early") {
		t.Errorf("the suite stopped early:\n%s", report)
	}
}
