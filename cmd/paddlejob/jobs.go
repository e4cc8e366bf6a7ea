package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

func init() {
	register(newDescribeCmd)
	register(newLogsCmd)
	register(newWaitCmd)
	register(newDeleteCmd)
	register(newScaleCmd)
}

func newDescribeCmd() *cobra.Command {
	var t targetFlags
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a PaddleJob's spec, conditions, pods with their state and exit codes, failed containers (why, what to do, their last lines), and recent events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := t.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			job, err := c.Get(ctx, t.ns(), args[0])
			if err != nil {
				return err
			}
			pods, err := c.Pods(ctx, job.Namespace, job.Name)
			if err != nil {
				return err
			}
			events, err := c.Events(ctx, job.Namespace, job.UID)
			if err != nil {
				return err
			}
			describeJob(cmd.OutOrStdout(), job, pods, c.WhyPending(ctx, pods), events, time.Now())
			return nil
		},
		ValidArgsFunction: completeJobNames(&t, false),
	}
	t.bind(cmd)
	return cmd
}

const logsLong = `Print the logs of a PaddleJob's pods. Select one pod by its short name (worker-0) or
full name, a role (ps, worker, heter), or all (the default). Lines of several pods are
prefixed with the pod's short name. --previous, --since, --since-time, --timestamps and
--tail work as with kubectl logs (the local cluster's node serves them too).`

const logsExample = `  paddlejob logs wide-and-deep worker-0
  paddlejob logs wide-and-deep worker -f
  paddlejob logs wide-and-deep --tail 20 --timestamps
  paddlejob logs wide-and-deep ps-0 --previous      # the run before the last restart
  paddlejob logs wide-and-deep --since 5m`

func newLogsCmd() *cobra.Command {
	var t targetFlags
	var opts client.LogOptions
	var sinceTime string
	cmd := &cobra.Command{
		Use:               "logs NAME [POD|ROLE|all]",
		Short:             "Print the logs of a job's pods: one pod (worker-0), a role (worker) or all",
		Long:              logsLong,
		Example:           logsExample,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeLogsArgs(&t),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sinceTime != "" {
				if opts.Since > 0 {
					return errors.New("give --since or --since-time, not both")
				}
				st, err := time.Parse(time.RFC3339, sinceTime)
				if err != nil {
					return fmt.Errorf("--since-time %q: want an RFC 3339 time such as 2026-11-25T10:00:00Z", sinceTime)
				}
				opts.SinceTime = st
			}
			if opts.Since < 0 {
				return fmt.Errorf("--since %s: must not be negative", opts.Since)
			}
			c, err := t.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			name, selector := args[0], "all"
			if len(args) == 2 {
				selector = args[1]
			}
			pods, err := c.Pods(ctx, t.ns(), name)
			if err != nil {
				return err
			}
			if len(pods) == 0 {
				return noPods(ctx, c, t.ns(), name)
			}
			var chosen []client.PodLog
			for i := range pods {
				if followed([]string{selector}, name, &pods[i]) {
					chosen = append(chosen, client.PodLog{Pod: pods[i].Name, Container: opts.Container})
				}
			}
			if len(chosen) == 0 {
				return fmt.Errorf("PaddleJob %s/%s has no pod matching %q (%d pods)", t.ns(), name, selector, len(pods))
			}
			if len(chosen) > 1 {
				for i := range chosen {
					chosen[i].Prefix = "[" + strings.TrimPrefix(chosen[i].Pod, name+"-") + "] "
				}
			}
			if !opts.Follow && opts.TailLines == 0 && len(chosen) == 1 {
				r, err := c.Logs(ctx, t.ns(), chosen[0].Pod, opts)
				if err != nil {
					return err
				}
				defer r.Close()
				_, err = io.Copy(cmd.OutOrStdout(), r)
				return err
			}
			return c.StreamLogs(ctx, t.ns(), chosen, cmd.OutOrStdout(), client.StreamOptions{Follow: opts.Follow, TailLines: opts.TailLines,
				Previous: opts.Previous, Timestamps: opts.Timestamps, Since: opts.Since, SinceTime: opts.SinceTime})
		},
	}
	t.bind(cmd)
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "follow the logs")
	cmd.Flags().Int64Var(&opts.TailLines, "tail", 0, "only the last lines of each pod's log")
	cmd.Flags().StringVarP(&opts.Container, "container", "c", "", "container (default: each pod's first)")
	cmd.Flags().BoolVarP(&opts.Previous, "previous", "p", false, "the log of the container's previous run (before its last restart)")
	cmd.Flags().BoolVar(&opts.Timestamps, "timestamps", false, "prefix each line with its time (RFC 3339)")
	cmd.Flags().DurationVar(&opts.Since, "since", 0, "only lines newer than this, e.g. 5s, 2m, 3h")
	cmd.Flags().StringVar(&sinceTime, "since-time", "", "only lines from this time on (RFC 3339)")
	return cmd
}

func newWaitCmd() *cobra.Command {
	var t targetFlags
	var forCond string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait NAME --for CONDITION",
		Short: "Wait for a PaddleJob to reach a phase or condition",
		Long: `Wait until the job reaches the given state: Completed (fails early if the job fails),
Finished (completed or failed), Running, Deleted, or condition=<Type> for any condition
of the job (Created, Running, Succeeded, Failed). Exits 0 when met, 1 if the job failed
instead, 2 on timeout.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobNames(&t, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := t.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if strings.EqualFold(forCond, "deleted") {
				return waitDeleted(cmd, c, t.ns(), args[0], timeout)
			}
			cond, err := parseCondition(forCond)
			if err != nil {
				return err
			}
			job, err := c.WaitFor(ctx, t.ns(), args[0], cond, timeout)
			switch {
			case errors.Is(err, client.ErrJobFailed):
				return exitError{code: 1, msg: err.Error()}
			case err != nil && strings.HasPrefix(err.Error(), "timed out"):
				return exitError{code: 2, msg: err.Error()}
			case err != nil:
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob %s/%s: %s\n", job.Namespace, job.Name, forCond)
			return nil
		},
	}
	t.bind(cmd)
	cmd.Flags().StringVar(&forCond, "for", "Completed", "Completed, Finished, Running, Deleted or condition=<Type>")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: no limit)")
	return cmd
}

// parseCondition reads a --for value.
func parseCondition(s string) (client.Condition, error) {
	switch strings.ToLower(s) {
	case "completed", "complete", "succeeded":
		return client.Completed, nil
	case "finished":
		return client.Finished, nil
	case "running":
		return client.Running, nil
	}
	if t, ok := strings.CutPrefix(s, "condition="); ok && t != "" {
		return client.ConditionTrue(t), nil
	}
	return nil, fmt.Errorf("--for %q: want Completed, Finished, Running, Deleted or condition=<Type>", s)
}

func waitDeleted(cmd *cobra.Command, c *client.Client, ns, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for timeout == 0 || time.Now().Before(deadline) {
		_, err := c.Get(cmd.Context(), ns, name)
		if apierrors.IsNotFound(errors.Unwrap(err)) {
			fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob %s/%s deleted\n", ns, name)
			return nil
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return exitError{code: 2, msg: fmt.Sprintf("timed out after %s waiting for PaddleJob %s/%s to be deleted", timeout, ns, name)}
}

func newDeleteCmd() *cobra.Command {
	var t targetFlags
	var all, wait bool
	var selector string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "delete (NAME... | --all | -l SELECTOR)",
		Short: "Delete PaddleJobs with their pods, Service and ConfigMap",
		Long: `Delete the PaddleJobs named, every job of the namespace (--all) or those matching a
label selector (-l); their pods, Service and ConfigMap go with them. With --wait it
returns once the jobs and their pods are gone (exit code 2 after --timeout). It says
which cluster (kubeconfig context) it deleted from.`,
		Example: `  paddlejob delete wide-and-deep
  paddlejob delete --all --wait
  paddlejob delete -l team=ranking`,
		ValidArgsFunction: completeJobNames(&t, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 && !all && selector == "":
				return errors.New("name the jobs to delete, or give --all or -l SELECTOR")
			case len(args) > 0 && (all || selector != ""):
				return errors.New("give job names, --all or -l SELECTOR: one of them")
			case all && selector != "":
				return errors.New("--all deletes every job of the namespace: leave out -l, or --all to delete the selected ones")
			}
			c, err := t.client(cmd)
			if err != nil {
				return err
			}
			ctx, ns := cmd.Context(), t.ns()
			names := args
			if len(names) == 0 {
				jobs, _, err := c.ListSelected(ctx, ns, selector)
				if err != nil {
					return err
				}
				for _, j := range jobs {
					names = append(names, j.Name)
				}
				if len(names) == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "No PaddleJobs to delete in namespace %s of %s.\n", ns, t.where())
					return nil
				}
			}
			var errs []error
			var deleted []string
			for _, name := range names {
				if err := c.Delete(ctx, ns, name); err != nil {
					errs = append(errs, err)
					continue
				}
				deleted = append(deleted, name)
				fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob %s/%s deleted from %s\n", ns, name, t.where())
			}
			if wait {
				for _, name := range deleted {
					if err := c.WaitDeleted(ctx, ns, name, timeout); err != nil {
						if ctx.Err() == nil && strings.HasPrefix(err.Error(), "timed out") {
							return exitError{code: 2, msg: err.Error()}
						}
						return err
					}
				}
			}
			return errors.Join(errs...)
		},
	}
	t.bind(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "delete every PaddleJob of the namespace")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "delete the jobs matching this label selector")
	cmd.Flags().BoolVar(&wait, "wait", false, "return once the jobs and their pods are gone")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (exit code 2; 0: no limit)")
	return cmd
}

func newScaleCmd() *cobra.Command {
	var t targetFlags
	var workers, ps, heter int32
	cmd := &cobra.Command{
		Use:               "scale NAME [--worker N] [--ps N] [--heter N]",
		Short:             "Change the replicas of a running PaddleJob's roles",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobNames(&t, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := t.client(cmd)
			if err != nil {
				return err
			}
			changes := map[paddlev1.ReplicaType]int32{}
			for rt, flag := range map[paddlev1.ReplicaType]string{paddlev1.ReplicaWorker: "worker", paddlev1.ReplicaPS: "ps", paddlev1.ReplicaHeter: "heter"} {
				if cmd.Flags().Changed(flag) {
					v := map[string]int32{"worker": workers, "ps": ps, "heter": heter}[flag]
					if v < 1 || v > paddlev1.MaxReplicas {
						return fmt.Errorf("--%s %d: replicas must be between 1 and %d", flag, v, paddlev1.MaxReplicas)
					}
					changes[rt] = v
				}
			}
			if len(changes) == 0 {
				return errors.New("nothing to scale: give --worker, --ps or --heter")
			}
			for _, rt := range paddlev1.ReplicaTypes {
				n, ok := changes[rt]
				if !ok {
					continue
				}
				if _, err := c.Scale(cmd.Context(), t.ns(), args[0], rt, n); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob %s/%s: %s scaled to %d\n", t.ns(), args[0], rt, n)
			}
			return nil
		},
	}
	t.bind(cmd)
	cmd.Flags().Int32Var(&workers, "worker", 0, "worker replicas")
	cmd.Flags().Int32Var(&ps, "ps", 0, "parameter-server replicas")
	cmd.Flags().Int32Var(&heter, "heter", 0, "heter trainer replicas")
	return cmd
}

// noPods is the error of logs for a job without pods: the job is not
// found, or it has none in its phase.
func noPods(ctx context.Context, c *client.Client, ns, name string) error {
	job, err := c.Get(ctx, ns, name)
	if err != nil {
		return err
	}
	return fmt.Errorf("PaddleJob %s/%s has no pods (phase %s)", ns, name, cmp.Or(string(job.Status.Phase), "none yet"))
}
