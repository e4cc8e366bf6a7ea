package main

import (
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/localcluster"
)

func init() { register(newSuperviseCmd) }

// newSuperviseCmd runs one component of the local cluster, restarting it
// whenever it exits (localcluster.Supervise); `up` starts every component
// this way.
func newSuperviseCmd() *cobra.Command {
	var status string
	cmd := &cobra.Command{
		Use:    "supervise --status FILE -- COMMAND [ARG...]",
		Short:  "Run a local cluster component, restarting it when it exits",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return localcluster.Supervise(ctx, args, status, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "file the supervisor records the component's restarts in")
	return cmd
}
