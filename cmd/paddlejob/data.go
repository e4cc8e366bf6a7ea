package main

import (
	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/podtools/podcmd"
)

// `paddlejob data split`, as the paddlejob-launch binary has it too.
func init() { register(func() *cobra.Command { return podcmd.Data("paddlejob data") }) }
