package main

import (
	"flag"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/operator"
)

func init() { register(newOperatorCmd) }

// newOperatorCmd runs the operator from the paddlejob binary, so the local
// cluster needs no second binary. It is the same code as paddlejob-operator.
func newOperatorCmd() *cobra.Command {
	opts := operator.DefaultOptions()
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	opts.BindFlags(fs)
	cmd := &cobra.Command{
		Use:    "operator",
		Short:  "Run the PaddleJob operator (as paddlejob-operator does)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return operator.Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().AddGoFlagSet(fs)
	return cmd
}
