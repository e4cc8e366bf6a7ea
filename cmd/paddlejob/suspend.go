package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func init() {
	register(func() *cobra.Command { return newSuspendCmd(true) })
	register(func() *cobra.Command { return newSuspendCmd(false) })
}

// newSuspendCmd is `suspend` (spec.suspend: true), or `resume` (false).
func newSuspendCmd(suspend bool) *cobra.Command {
	var t targetFlags
	cmd := &cobra.Command{
		Use:   "suspend NAME...",
		Short: "Suspend PaddleJobs: their pods are deleted, the jobs stay (paddlejob resume restarts them)",
		Long: `Suspend PaddleJobs (spec.suspend: true): the operator deletes their pods and keeps
the jobs, phase Suspended, their deadlines paused. paddlejob resume creates the pods
again, with the same names: a program that saves checkpoints resumes from its last one
(docs/lifecycle.md).`,
		Example:           "  paddlejob suspend wide-and-deep",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeJobNames(&t, true),
	}
	if !suspend {
		cmd.Use = "resume NAME..."
		cmd.Short = "Resume suspended PaddleJobs: their pods are created again"
		cmd.Long = `Resume suspended PaddleJobs (spec.suspend: false): the operator creates their pods
again, with the same names. A job that Kueue queues (label kueue.x-k8s.io/queue-name) is
resumed by Kueue when it admits it, not by this command.`
		cmd.Example = "  paddlejob resume wide-and-deep"
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, err := t.client(cmd)
		if err != nil {
			return err
		}
		ctx, ns := cmd.Context(), t.ns()
		var errs []error
		for _, name := range args {
			job, err := c.Get(ctx, ns, name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if job.Spec.IsSuspended() == suspend {
				fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob %s/%s is %s already\n", ns, name, map[bool]string{true: "suspended", false: "not suspended"}[suspend])
				continue
			}
			if _, err := c.SetSuspended(ctx, ns, name, suspend); err != nil {
				errs = append(errs, err)
				continue
			}
			if suspend {
				fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob %s/%s suspended in %s: its pods are deleted; paddlejob resume %s creates them again\n", ns, name, t.where(), name)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob %s/%s resumed in %s: its pods are created again\n", ns, name, t.where())
			}
		}
		return errors.Join(errs...)
	}
	t.bind(cmd)
	return cmd
}
