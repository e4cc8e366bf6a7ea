package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/podtools/launcher"
	"github.com/paddlejob/paddlejob/internal/podtools/podcmd"
)

// `paddlejob launch`: the in-pod launcher, which the paddlejob-launch binary
// is (internal/podtools/podcmd).
func init() { register(newLaunchCmd) }

// newLaunchCmd is podcmd's launch, exiting with the launch's code.
func newLaunchCmd() *cobra.Command {
	cmd := podcmd.Launch("paddlejob launch")
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		if exit := (*launcher.ExitError)(nil); errors.As(err, &exit) {
			return exitError{code: exit.Code, msg: exit.Reason}
		}
		return err
	}
	return cmd
}
