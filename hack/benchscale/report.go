package main

// The report: a markdown table of the scenarios' medians, details, and the
// machine the numbers were measured on.

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// row is every run of one scenario.
type row struct {
	Scenario scenario
	Runs     []runResult
}

// report is everything printed.
type report struct {
	Date         time.Time
	Machine      machine
	ControlPlane string
	Operator     string
	Settings     string
	Runs         int
	Rows         []row
	// Costs are the request costs, CostRequests the requests of each kind
	// they were measured on.
	Costs        []requestCost
	CostRequests int
	// Failure, when set, says why the suite stopped early.
	Failure string
}

// machine describes where the benchmark ran.
type machine struct {
	CPUModel  string
	CPUs      int
	MemoryGiB float64
	Kernel    string
	Go        string
	LoadAvg   string
}

// readMachine reads /proc; what it cannot read stays empty.
func readMachine() machine {
	m := machine{Go: runtime.Version(), CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if model, n := parseCPUInfo(string(b)); n > 0 {
			m.CPUModel, m.CPUs = model, n
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, err := parseStatusKB(b, "MemTotal"); err == nil {
			m.MemoryGiB = float64(kb) / (1 << 20)
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// parseCPUInfo returns the first model name of /proc/cpuinfo and the number
// of processors.
func parseCPUInfo(s string) (model string, n int) {
	for _, line := range strings.Split(s, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "processor":
			n++
		case "model name":
			if model == "" {
				model = strings.TrimSpace(value)
			}
		}
	}
	return model, n
}

// median of xs (the mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianOf is the median of f over the runs.
func medianOf(runs []runResult, f func(runResult) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return median(xs)
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// opsKnown is true when every run counted the operator's requests.
func opsKnown(runs []runResult) bool {
	for _, r := range runs {
		if !r.OpsKnown {
			return false
		}
	}
	return len(runs) > 0
}

// perJob returns the median writes and requests per job.
func perJob(rw row) (writes, all float64) {
	jobs := float64(rw.Scenario.Jobs)
	writes = medianOf(rw.Runs, func(r runResult) float64 { w, _ := r.Ops.totals(); return w / jobs })
	all = medianOf(rw.Runs, func(r runResult) float64 { _, a := r.Ops.totals(); return a / jobs })
	return writes, all
}

// topRequests is the median count per job of each kind of request, largest
// first, at most n of them.
func topRequests(rw row, n int) string {
	keys := map[requestKey]bool{}
	for _, r := range rw.Runs {
		for k := range r.Ops {
			keys[k] = true
		}
	}
	med := requestCounts{}
	for k := range keys {
		med[k] = medianOf(rw.Runs, func(r runResult) float64 { return r.Ops[k] }) / float64(rw.Scenario.Jobs)
	}
	var parts []string
	for i, k := range med.sortedKeys() {
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", k, num(med[k])))
	}
	return strings.Join(parts, ", ")
}

// num prints a count compactly: integers without decimals.
func num(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func secs(v float64) string { return fmt.Sprintf("%.2f", v) }

// formatReport writes the report as markdown.
func formatReport(w io.Writer, rep report) {
	formatSettings(w, rep)
	formatScenarioTable(w, rep.Rows)
	formatDetailsTable(w, rep.Rows)
	if rep.Runs > 1 {
		formatEveryRun(w, rep.Rows)
	}
	formatPhases(w, rep.Rows)
	formatRequestCosts(w, rep.CostRequests, rep.Costs)
	if rep.Failure != "" {
		fmt.Fprintf(w, "\n**Stopped early:** %s\n", rep.Failure)
	}
}

// formatSettings writes the report's opening: the machine, the control
// plane, the controller, the harness and what each number is.
func formatSettings(w io.Writer, rep report) {
	fmt.Fprintf(w, "Measured %s on %s (%d CPUs), %.1f GiB memory, Linux %s, %s; load average at start %s.\n\n",
		rep.Date.UTC().Format("2006-01-02 15:04 MST"), orUnknown(rep.Machine.CPUModel), rep.Machine.CPUs,
		rep.Machine.MemoryGiB, orUnknown(rep.Machine.Kernel), rep.Machine.Go, orUnknown(rep.Machine.LoadAvg))
	fmt.Fprintf(w, "- control plane: %s\n", rep.ControlPlane)
	fmt.Fprintf(w, "- controller: %s\n", rep.Operator)
	fmt.Fprintf(w, "- harness: %s\n", rep.Settings)
	runs := "one run"
	if rep.Runs > 1 {
		runs = fmt.Sprintf("median of %d runs", rep.Runs)
	}
	fmt.Fprintf(w, "- each number: %s; ratio = operator time to all pods created / direct creation time\n\n", runs)
}

// formatScenarioTable writes the main table: per scenario, the operator's
// time to create every pod against the direct reference, and its costs.
func formatScenarioTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| scenario | pods | operator: all pods created (s) | direct (s) | ratio | all jobs Running (s) | writes/job | requests/job | operator CPU (s) | peak RSS (MiB) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	lifetimePeak := false
	for _, rw := range rows {
		created := medianOf(rw.Runs, func(r runResult) float64 { return seconds(r.AllCreated) })
		direct := medianOf(rw.Runs, func(r runResult) float64 { return seconds(r.Direct) })
		ratio := "n/a"
		if direct > 0 {
			ratio = fmt.Sprintf("%.2f", created/direct)
		}
		writes, all := "n/a", "n/a"
		if opsKnown(rw.Runs) {
			wj, aj := perJob(rw)
			writes, all = num(wj), num(aj)
		}
		rss := fmt.Sprintf("%.0f", medianOf(rw.Runs, func(r runResult) float64 { return float64(r.PeakRSS) / (1 << 20) }))
		for _, r := range rw.Runs {
			if r.PeakIsLifetime {
				rss += "*"
				lifetimePeak = true
				break
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			rw.Scenario.Name, rw.Scenario.pods(), secs(created), secs(direct), ratio,
			secs(medianOf(rw.Runs, func(r runResult) float64 { return seconds(r.Running) })),
			writes, all, secs(medianOf(rw.Runs, func(r runResult) float64 { return seconds(r.CPU) })), rss)
	}
	if lifetimePeak {
		fmt.Fprintln(w, "\n\\* the peak could not be reset before the scenario (/proc/<pid>/clear_refs): peak over the operator's life so far.")
	}
}

// formatDetailsTable writes the second table: the control plane's and the
// harness's CPU, pod sizes and the operator's requests per job.
func formatDetailsTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "\nDetails, from the first create to every job Running: when the last job create returned; the CPU time of the control plane (when the harness started it) and of the harness itself (clients, watches, fake kubelet); the control plane's CPU time during the direct reference; the size of a pod (JSON, status included; the largest of 50) of the operator and of the direct reference; the operator's requests per job by verb and resource.")
	fmt.Fprintln(w, "\n| scenario | jobs created (s) | kube-apiserver CPU (s) | etcd CPU (s) | harness CPU (s) | direct: kube-apiserver CPU (s) | pod size, operator / direct (KiB) | operator requests per job |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---|")
	for _, rw := range rows {
		cpu := func(name string, of func(runResult) map[string]time.Duration) string {
			for _, r := range rw.Runs {
				if _, ok := of(r)[name]; !ok {
					return "n/a"
				}
			}
			return secs(medianOf(rw.Runs, func(r runResult) float64 { return seconds(of(r)[name]) }))
		}
		scenarioCPU := func(r runResult) map[string]time.Duration { return r.ControlPlaneCPU }
		directCPU := func(r runResult) map[string]time.Duration { return r.DirectControlPlaneCPU }
		reqs := "n/a"
		if opsKnown(rw.Runs) {
			reqs = topRequests(rw, 8)
		}
		size := func(f func(runResult) int) string {
			return fmt.Sprintf("%.1f", medianOf(rw.Runs, func(r runResult) float64 { return float64(f(r)) / 1024 }))
		}
		sizes := size(func(r runResult) int { return r.PodBytes }) + " / " + size(func(r runResult) int { return r.DirectPodBytes })
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", rw.Scenario.Name,
			secs(medianOf(rw.Runs, func(r runResult) float64 { return seconds(r.JobsCreated) })),
			cpu("kube-apiserver", scenarioCPU), cpu("etcd", scenarioCPU),
			secs(medianOf(rw.Runs, func(r runResult) float64 { return seconds(r.HarnessCPU) })),
			cpu("kube-apiserver", directCPU), sizes, reqs)
	}
}

// formatEveryRun lists each run's times when there are several.
func formatEveryRun(w io.Writer, rows []row) {
	fmt.Fprintln(w, "\nEvery run (operator all created / direct / all Running, seconds):")
	fmt.Fprintln(w)
	for _, rw := range rows {
		var parts []string
		for _, r := range rw.Runs {
			parts = append(parts, fmt.Sprintf("%s / %s / %s", secs(seconds(r.AllCreated)), secs(seconds(r.Direct)), secs(seconds(r.Running))))
		}
		fmt.Fprintf(w, "- %s: %s\n", rw.Scenario.Name, strings.Join(parts, "; "))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// formatPhases writes the restart and complete phases of the scenarios that
// ran them: each run's figures (the phases are long; one run is usual).
func formatPhases(w io.Writer, rows []row) {
	header := false
	for _, rw := range rows {
		for i, r := range rw.Runs {
			for _, ph := range r.Phases {
				if !header {
					fmt.Fprintln(w, "\nAfter the scenario's jobs all ran (--restart-jobs, --complete-jobs): the pods whose status the harness wrote at once, from one client as the direct reference's; times from the first of those writes. Pods/s are the replacement pods over the time to the last one seen; the direct reference's rate is its pods over its time in the same run.")
					fmt.Fprintln(w, "\n| scenario, run | phase | jobs | pods written | written in (s) | replacement pods seen (s) | pods/s (direct) | all jobs done (s) | operator CPU (s) | peak RSS (MiB) | operator requests by verb |")
					fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
					header = true
				}
				fresh, rate := "n/a", "n/a"
				if ph.ReplacementPods > 0 {
					fresh = secs(seconds(ph.NewPods))
					rate = num(float64(ph.ReplacementPods) / ph.NewPods.Seconds())
					if r.Direct > 0 {
						rate += " (" + num(float64(rw.Scenario.pods())/r.Direct.Seconds()) + ")"
					}
				}
				reqs := "n/a"
				if ph.OpsKnown {
					reqs = byVerb(ph.Ops)
				}
				done := "all Running again"
				if ph.Name == phaseComplete {
					done = "all Completed"
				}
				fmt.Fprintf(w, "| %s, %d | %s | %d | %d | %s | %s | %s | %s (%s) | %s | %.0f | %s |\n",
					rw.Scenario.Name, i+1, ph.Name, ph.Jobs, ph.Pods, secs(seconds(ph.Marked)), fresh, rate,
					secs(seconds(ph.Done)), done, secs(seconds(ph.CPU)), float64(ph.PeakRSS)/(1<<20), reqs)
			}
		}
	}
}

// byVerb lists request counts by verb and resource, largest first.
func byVerb(c requestCounts) string {
	var parts []string
	for _, k := range c.sortedKeys() {
		parts = append(parts, fmt.Sprintf("%s %s", k, num(c[k])))
	}
	return strings.Join(parts, ", ")
}
