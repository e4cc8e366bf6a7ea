package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// subcommands holds the constructors of the top-level commands; each command's
// file registers its own in init, so commands live one per file.
var subcommands []func() *cobra.Command

func register(newCmd func() *cobra.Command) { subcommands = append(subcommands, newCmd) }

func newRootCmd() *cobra.Command {
	use := "paddlejob"
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		use = "kubectl paddlejob"
	}
	root := &cobra.Command{
		Use:           use,
		Short:         "Run PaddlePaddle distributed training jobs on Kubernetes, or on this machine",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, newCmd := range subcommands {
		root.AddCommand(newCmd())
	}
	return root
}

// exitError ends the program with a given code, after printing msg when set.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func asExit(err error, target *exitError) bool { return errors.As(err, target) }
