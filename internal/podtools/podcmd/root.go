package podcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/podtools/launcher"
	"github.com/paddlejob/paddlejob/internal/version"
)

// LauncherName is the in-pod launcher's binary (cmd/paddlejob-launch). The
// paddlejob CLI run under this name is the launcher too: the local cluster
// puts the CLI itself in its images when no paddlejob-launch was built
// beside it (a `go install`ed CLI).
const LauncherName = "paddlejob-launch"

// Root is the launcher itself, called name, with the CLI's in-pod commands
// below it: `launch` (the root again, for command lines written for
// `paddlejob launch`) and `data split`.
func Root(name string) *cobra.Command {
	root := Launch(name)
	root.Version = version.String()
	// A stray argument reaches the launcher, which says to put the program
	// after --, rather than cobra's "unknown command".
	root.Args = cobra.ArbitraryArgs
	root.SilenceUsage, root.SilenceErrors = true, true
	root.CompletionOptions.DisableDefaultCmd = true
	sub := Launch(name + " launch")
	sub.Short = "The same as " + name + " alone, for command lines written for `paddlejob launch`"
	root.AddCommand(sub, Data(name+" data"))
	return root
}

// Main runs root as a process's main: the trainer's exit code is the
// process's, and an error is printed under the command's name.
func Main(root *cobra.Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := root.ExecuteContext(ctx)
	stop()
	if exit := (*launcher.ExitError)(nil); errors.As(err, &exit) {
		if exit.Reason != "" {
			fmt.Fprintln(os.Stderr, root.Name()+":", exit.Reason)
		}
		os.Exit(exit.Code)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, root.Name()+":", err)
		os.Exit(1)
	}
}
