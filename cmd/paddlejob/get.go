package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/termprogress"
	"github.com/paddlejob/paddlejob/pkg/client"
)

func init() { register(newGetCmd) }

type getFlags struct {
	target   targetFlags
	output   string
	all      bool
	selector string
	watch    bool
}

func newGetCmd() *cobra.Command {
	var f getFlags
	cmd := &cobra.Command{
		Use:   "get [NAME...]",
		Short: "List PaddleJobs, or show some, with phase and per-role counts",
		Long: `List the PaddleJobs of the namespace (-A: of all), those matching a label selector
(-l), or the ones named, as kubectl get does. -o takes table (the default), wide, yaml,
json, name or jsonpath=TEMPLATE. -w prints the jobs, then a row (or object) for each change
until interrupted.

Under the table, a job whose pods the scheduler cannot place says why ("Pending worker-0:
needs 5 CPU, the node has 2"), and on the local cluster how to start it so they fit.`,
		Example: `  paddlejob get
  paddlejob get wide-and-deep -o yaml
  paddlejob get -l team=ranking -o name
  paddlejob get -A -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}'
  paddlejob get -w`,
		ValidArgsFunction: completeJobNames(&f.target, true),
		RunE:              func(cmd *cobra.Command, args []string) error { return getJobs(cmd, &f, args) },
	}
	f.target.bind(cmd)
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table, wide, yaml, json, name or jsonpath=TEMPLATE")
	cmd.Flags().BoolVarP(&f.all, "all-namespaces", "A", false, "list the jobs of every namespace")
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "label selector, e.g. team=ranking,tier!=test")
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", false, "after printing, print each change until interrupted")
	return cmd
}

func getJobs(cmd *cobra.Command, f *getFlags, names []string) error {
	format, err := parseOutput(f.output)
	if err != nil {
		return err
	}
	if len(names) > 0 && f.selector != "" {
		return errors.New("give job names or a label selector (-l), not both")
	}
	if len(names) > 0 && f.all {
		return errors.New("a job name needs its namespace (-n), not --all-namespaces")
	}
	if f.watch && len(names) > 1 {
		return errors.New("watch one job by name, or a namespace's jobs (-l to select them)")
	}
	c, err := f.target.client(cmd)
	if err != nil {
		return err
	}
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	ns := f.target.ns()
	if f.all {
		ns = ""
	}
	jobs, rv, err := fetchJobs(ctx, c, ns, names, f.selector)
	if err != nil {
		return err
	}
	single := len(names) == 1
	t := &table{w: out}
	if format.human() && (len(jobs) > 0 || !f.watch) {
		if len(jobs) == 0 {
			fmt.Fprintln(out, "No PaddleJobs found.")
		} else {
			t.row(jobHeader(format.kind == "wide", f.all))
			for i := range jobs {
				t.row(jobRow(&jobs[i], format.kind == "wide", f.all, time.Now()))
			}
			if err := t.flush(); err != nil {
				return err
			}
		}
		if !f.watch {
			printPendingNotes(ctx, c, out, ns, jobs)
		}
	} else if !format.human() && (len(jobs) > 0 || !f.watch) {
		if err := format.print(out, jobs, f.all, single); err != nil {
			return err
		}
	}
	if !f.watch {
		return nil
	}
	name := ""
	if len(names) == 1 {
		name = names[0]
	}
	if rv == "" && len(jobs) == 1 {
		rv = jobs[0].ResourceVersion
	}
	return watchJobs(ctx, c, ns, name, f.selector, rv, func(j *paddlev1.PaddleJob, deleted bool) error {
		if format.human() {
			if len(t.widths) == 0 {
				t.row(jobHeader(format.kind == "wide", f.all))
			}
			row := jobRow(j, format.kind == "wide", f.all, time.Now())
			if deleted {
				phase := 1 // after NAME, or NAMESPACE and NAME
				if f.all {
					phase = 2
				}
				row[phase] = "Deleted"
			}
			t.row(row)
			return t.flush()
		}
		return format.print(out, []paddlev1.PaddleJob{*j}, f.all, true)
	})
}

// fetchJobs gets the jobs of those names, or lists those the selector
// selects (with the list's resourceVersion, to watch from).
func fetchJobs(ctx context.Context, c *client.Client, ns string, names []string, selector string) ([]paddlev1.PaddleJob, string, error) {
	if len(names) == 0 {
		return c.ListSelected(ctx, ns, selector)
	}
	var jobs []paddlev1.PaddleJob
	for _, name := range names {
		job, err := c.Get(ctx, ns, name)
		if err != nil {
			return nil, "", err
		}
		jobs = append(jobs, *job)
	}
	return jobs, "", nil
}

// watchJobs calls fn for each change of the jobs from resourceVersion on,
// until ctx ends, watching again when the API server ends a watch and
// listing again when the resourceVersion is too old.
func watchJobs(ctx context.Context, c *client.Client, ns, name, selector, rv string, fn func(*paddlev1.PaddleJob, bool) error) error {
	for ctx.Err() == nil {
		w, err := c.WatchJobs(ctx, ns, name, selector, rv)
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				j, ok := ev.Object.(*paddlev1.PaddleJob)
				if !ok {
					continue
				}
				rv = j.ResourceVersion
				if err := fn(j, ev.Type == watch.Deleted); err != nil {
					w.Stop()
					return err
				}
			case watch.Error:
				// Most likely 410 Gone: the resourceVersion is too old. Go on
				// from now; changes in between are not printed.
				if status, ok := ev.Object.(*metav1.Status); ok && status.Code == 410 {
					rv = ""
				}
			}
		}
		w.Stop()
	}
	return nil
}

// printPendingNotes says, under a table, why the scheduler leaves pods of
// the unfinished jobs Pending. It lists the jobs' pods once, whatever their
// number, and reads the nodes only when a pod waits for one.
func printPendingNotes(ctx context.Context, c *client.Client, w io.Writer, ns string, jobs []paddlev1.PaddleJob) {
	unfinished := map[types.NamespacedName]bool{}
	for i := range jobs {
		if j := &jobs[i]; !j.Status.IsFinished() && !j.Spec.IsSuspended() {
			unfinished[types.NamespacedName{Namespace: j.Namespace, Name: j.Name}] = true
		}
	}
	if len(unfinished) == 0 {
		return
	}
	list, err := c.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: paddlev1.LabelJobName})
	if err != nil {
		return // the notes are extras: the table is printed
	}
	pods := map[types.NamespacedName][]corev1.Pod{}
	for _, p := range list.Items {
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[paddlev1.LabelJobName]}
		if unfinished[key] {
			pods[key] = append(pods[key], p)
		}
	}
	first := true
	for i := range jobs {
		key := types.NamespacedName{Namespace: jobs[i].Namespace, Name: jobs[i].Name}
		if len(pods[key]) == 0 {
			continue
		}
		client.SortPods(pods[key])
		lines := termprogress.PendingLines(key.Name, c.WhyPending(ctx, pods[key]))
		for _, l := range append(lines, termprogress.WaitingLines(key.Name, pods[key])...) {
			if first {
				fmt.Fprintln(w)
				first = false
			}
			fmt.Fprintf(w, "%s: %s\n", key.Name, l)
		}
	}
}
