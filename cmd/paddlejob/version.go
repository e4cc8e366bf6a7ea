package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/version"
)

func init() { register(newVersionCmd) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "paddlejob", version.String())
		},
	}
}
