// Command paddlejob-launch is the in-pod launcher of plain batch/v1 Jobs that
// train with PaddlePaddle: the container entrypoint that finds the Job's pods
// and starts each pod's pserver and trainer (`paddlejob launch`), and the
// data split of the tutorial's data Job (`paddlejob data split`). It is what
// a training image copies (docs/launcher.md), a fraction of the paddlejob
// binary, which holds the CLI, the operator and the local cluster as well.
//
// Its commands are the CLI's own (internal/podtools/podcmd). Copied into an
// image as paddlejob, command lines written for the CLI (`paddlejob launch
// -- ...`, `paddlejob data split ...`) run unchanged.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/podtools/launcher"
	"github.com/paddlejob/paddlejob/internal/podtools/podcmd"
	"github.com/paddlejob/paddlejob/internal/version"
)

const name = "paddlejob-launch"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	if exit := (*launcher.ExitError)(nil); errors.As(err, &exit) {
		if exit.Reason != "" {
			fmt.Fprintln(os.Stderr, name+":", exit.Reason)
		}
		os.Exit(exit.Code)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// newRootCmd is the launcher itself, with the CLI's in-pod commands below
// it: `launch` (the root again, for command lines written for `paddlejob
// launch`) and `data split`.
func newRootCmd() *cobra.Command {
	root := podcmd.Launch(name)
	root.Version = version.String()
	// A stray argument reaches the launcher, which says to put the program
	// after --, rather than cobra's "unknown command".
	root.Args = cobra.ArbitraryArgs
	root.SilenceUsage, root.SilenceErrors = true, true
	root.CompletionOptions.DisableDefaultCmd = true
	sub := podcmd.Launch(name + " launch")
	sub.Short = "The same as " + name + " alone, for command lines written for `paddlejob launch`"
	root.AddCommand(sub, podcmd.Data(name+" data"))
	return root
}
