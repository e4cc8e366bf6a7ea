package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/termprogress"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// outputFormat is a parsed -o value: table, wide, yaml, json, name or
// jsonpath=TEMPLATE, as kubectl takes them.
type outputFormat struct {
	kind     string
	jsonpath *jsonpath.JSONPath
}

// parseOutput reads -o.
func parseOutput(s string) (outputFormat, error) {
	switch s {
	case "", "table":
		return outputFormat{kind: "table"}, nil
	case "wide", "yaml", "json", "name":
		return outputFormat{kind: s}, nil
	}
	if tmpl, ok := strings.CutPrefix(s, "jsonpath="); ok {
		// kubectl's relaxed form: the braces may be left out.
		if !strings.Contains(tmpl, "{") {
			tmpl = "{" + tmpl + "}"
		}
		jp := jsonpath.New("output").AllowMissingKeys(true)
		if err := jp.Parse(tmpl); err != nil {
			return outputFormat{}, fmt.Errorf("--output %q: %w", s, err)
		}
		return outputFormat{kind: "jsonpath", jsonpath: jp}, nil
	}
	return outputFormat{}, fmt.Errorf("--output %q: want table, wide, yaml, json, name or jsonpath=TEMPLATE", s)
}

// human reports whether the format is a table for people.
func (o outputFormat) human() bool { return o.kind == "table" || o.kind == "wide" }

// printJobs writes jobs as a table (kubectl get's columns), YAML, JSON,
// names or a JSONPath template's output. A single named job prints as an
// object, a listing as a list.
func printJobs(w io.Writer, jobs []paddlev1.PaddleJob, format string, withNamespace, single bool) error {
	o, err := parseOutput(format)
	if err != nil {
		return err
	}
	return o.print(w, jobs, withNamespace, single)
}

func (o outputFormat) print(w io.Writer, jobs []paddlev1.PaddleJob, withNamespace, single bool) error {
	for i := range jobs {
		jobs[i].APIVersion, jobs[i].Kind = paddlev1.GroupVersion.String(), "PaddleJob"
	}
	var obj any = &paddlev1.PaddleJobList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: jobs}
	if single && len(jobs) == 1 {
		obj = &jobs[0]
	}
	switch o.kind {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(obj)
	case "yaml":
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "name":
		for i := range jobs {
			fmt.Fprintln(w, jobResourceName(jobs[i].Name))
		}
		return nil
	case "jsonpath":
		// The template sees the object as JSON does.
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		var generic any
		if err := json.Unmarshal(data, &generic); err != nil {
			return err
		}
		if err := o.jsonpath.Execute(w, generic); err != nil {
			return fmt.Errorf("--output jsonpath: %w", err)
		}
		return nil
	}
	if len(jobs) == 0 {
		_, err := fmt.Fprintln(w, "No PaddleJobs found.")
		return err
	}
	t := &table{w: w}
	t.row(jobHeader(o.kind == "wide", withNamespace))
	for i := range jobs {
		t.row(jobRow(&jobs[i], o.kind == "wide", withNamespace, time.Now()))
	}
	return t.flush()
}

// jobResourceName is a job as -o name writes it, kubectl's resource.group/name.
func jobResourceName(name string) string {
	return "paddlejob." + paddlev1.GroupVersion.Group + "/" + name
}

func jobHeader(wide, withNamespace bool) []string {
	header := []string{"NAME", "PHASE", "MODE", "PS", "WORKER", "HETER", "PROGRESS", "AGE"}
	if wide {
		header = append(header, "INTRANET", "CLEAN-POD-POLICY", "REASON", "ETA", "METRICS")
	}
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	return header
}

func jobRow(j *paddlev1.PaddleJob, wide, withNamespace bool, now time.Time) []string {
	row := []string{j.Name, dash(string(j.Status.Phase)), dash(string(j.Status.Mode)),
		ready(j, paddlev1.ReplicaPS), ready(j, paddlev1.ReplicaWorker), ready(j, paddlev1.ReplicaHeter),
		percent(j.Status.Progress), duration.HumanDuration(now.Sub(j.CreationTimestamp.Time))}
	if wide {
		row = append(row, string(j.Defaulted().Spec.Intranet), string(j.Spec.EffectiveCleanPodPolicy()), reason(j),
			dash(termprogress.ETA(j.Status.Progress)), dash(termprogress.MetricsText(j.Status.Progress)))
	}
	if withNamespace {
		row = append([]string{j.Namespace}, row...)
	}
	return row
}

// table writes rows in columns that keep the widths they had, so that rows
// printed later (get -w) line up with the first ones.
type table struct {
	w      io.Writer
	rows   [][]string
	widths []int
}

// row adds a row; it is written by flush.
func (t *table) row(cells []string) {
	for i, c := range cells {
		if i == len(t.widths) {
			t.widths = append(t.widths, 0)
		}
		t.widths[i] = max(t.widths[i], len(c))
	}
	t.rows = append(t.rows, cells)
}

// flush writes the rows added since the last flush.
func (t *table) flush() error {
	for _, cells := range t.rows {
		var b strings.Builder
		for i, c := range cells {
			if i == len(cells)-1 {
				b.WriteString(c)
				break
			}
			fmt.Fprintf(&b, "%-*s", t.widths[i]+3, c)
		}
		if _, err := fmt.Fprintln(t.w, b.String()); err != nil {
			return err
		}
	}
	t.rows = nil
	return nil
}

// percent is the reported percent done, "-" when none.
func percent(p *paddlev1.JobProgress) string {
	if p == nil || p.Percent == nil {
		return "-"
	}
	return fmt.Sprintf("%d%%", *p.Percent)
}

func ready(j *paddlev1.PaddleJob, rt paddlev1.ReplicaType) string {
	if rs := j.Status.ReplicaStatus(rt); rs != nil && rs.Ready != "" {
		return rs.Ready
	}
	if n := j.Spec.ReplicaCount(rt); n > 0 {
		return fmt.Sprintf("0/%d", n)
	}
	return "-"
}

// finishedCounts is how a finished job's role ended: ", succeeded 2",
// ", stopped 2" (pods the operator stopped when the job finished).
func finishedCounts(j *paddlev1.PaddleJob, rt paddlev1.ReplicaType) string {
	rs := j.Status.ReplicaStatus(rt)
	if rs == nil || !j.Status.IsFinished() {
		return ""
	}
	var b strings.Builder
	for _, c := range []struct {
		name string
		n    int32
	}{{"succeeded", rs.Succeeded}, {"failed", rs.Failed}, {"stopped", rs.Stopped}} {
		if c.n > 0 {
			fmt.Fprintf(&b, ", %s %d", c.name, c.n)
		}
	}
	return b.String()
}

// reason is the reason of the job's most telling condition.
func reason(j *paddlev1.PaddleJob) string {
	for _, t := range []string{paddlev1.JobFailed, paddlev1.JobSucceeded, paddlev1.JobRunning, paddlev1.JobCreated} {
		for _, c := range j.Status.Conditions {
			if c.Type == t && (c.Status == "True" || t == paddlev1.JobRunning) {
				return c.Reason
			}
		}
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// describeJob writes a human summary of a job: spec, status, conditions,
// pods with their state and exit codes, failed containers with their
// explanation and last lines (failures.go), and recent events.
func describeJob(w io.Writer, j *paddlev1.PaddleJob, pods []corev1.Pod, pending []client.Unschedulable, events []corev1.Event, now time.Time) {
	fmt.Fprintf(w, "Name:              %s\n", j.Name)
	fmt.Fprintf(w, "Namespace:         %s\n", j.Namespace)
	fmt.Fprintf(w, "Created:           %s (%s ago)\n", j.CreationTimestamp.Format(time.RFC3339), duration.HumanDuration(now.Sub(j.CreationTimestamp.Time)))
	fmt.Fprintf(w, "Phase:             %s\n", dash(string(j.Status.Phase)))
	fmt.Fprintf(w, "Mode:              %s\n", dash(string(j.Status.Mode)))
	fmt.Fprintf(w, "Intranet:          %s\n", j.Defaulted().Spec.Intranet)
	fmt.Fprintf(w, "Clean pod policy:  %s\n", j.Spec.EffectiveCleanPodPolicy())
	if g := j.Spec.GlooLevel(); g > 0 {
		fmt.Fprintf(w, "Gloo:              %d\n", g)
	}
	if t := j.Status.StartTime; t != nil {
		fmt.Fprintf(w, "Started:           %s\n", t.Format(time.RFC3339))
	}
	if t := j.Status.CompletionTime; t != nil {
		fmt.Fprintf(w, "Finished:          %s\n", t.Format(time.RFC3339))
	}
	if p := j.Status.Progress; p != nil {
		fmt.Fprintf(w, "Progress:          %s\n", termprogress.TrainingLine(p))
		if p.LastUpdateTime != nil {
			fmt.Fprintf(w, "  reported by %s, %s ago\n", dash(p.Reporter), duration.HumanDuration(now.Sub(p.LastUpdateTime.Time)))
		}
	}
	fmt.Fprintln(w, "Roles:")
	for _, rt := range paddlev1.ReplicaTypes {
		rs := j.Spec.Replicas(rt)
		if rs == nil {
			continue
		}
		var images []string
		for _, c := range rs.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		fmt.Fprintf(w, "  %-7s replicas %d, ready %s%s, image %s\n", rt, rs.Replicas, ready(j, rt), finishedCounts(j, rt), strings.Join(images, ", "))
	}
	fmt.Fprintln(w, "Conditions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE")
	for _, c := range j.Status.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)), c.Message)
	}
	tw.Flush()
	fmt.Fprintln(w, "Pods:")
	if len(pods) == 0 {
		fmt.Fprintln(w, "  none")
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(pods) > 0 {
		fmt.Fprintln(tw, "  NAME\tSTATE\tRESTARTS\tIP\tNODE\tEXIT CODES")
	}
	for i := range pods {
		p := &pods[i]
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\n", p.Name, termprogress.PodState(p), restarts(p), dash(p.Status.PodIP), dash(p.Spec.NodeName), exitCodes(p))
	}
	tw.Flush()
	for _, l := range termprogress.PendingLines(j.Name, pending) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	for _, l := range termprogress.WaitingLines(j.Name, pods) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	describeFailures(w, j, pods)
	fmt.Fprintln(w, "Events:")
	if len(events) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	if len(events) > 20 {
		events = events[len(events)-20:]
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tREASON\tAGE\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.Type, e.Reason, duration.HumanDuration(now.Sub(client.EventTime(e))), e.Message)
	}
	tw.Flush()
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// exitCodes lists the exit codes of a pod's terminated containers.
func exitCodes(p *corev1.Pod) string {
	var out []string
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			out = append(out, fmt.Sprintf("%s=%d", cs.Name, t.ExitCode))
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}
