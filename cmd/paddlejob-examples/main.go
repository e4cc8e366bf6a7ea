// Command paddlejob-examples trains a wide & deep click-through-rate model on
// synthetic data, the way PaddlePaddle jobs do, in pure Go: with parameter
// servers or collectively with a ring all-reduce. It reads the PaddleJob
// operator's environment contract, or legacy PaddlePaddle v1 flags. See
// examples/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, out streams) error
}

// streams are where a command writes: the summary line to stdout, logs to
// stderr.
type streams struct{ stdout, stderr io.Writer }

var commands = []command{
	{"wide-and-deep", "parameter-server training; role and peers from the environment contract", runWideAndDeep},
	{"collective", "ring all-reduce training; peers from the environment contract", runCollective},
	{"pserver", "a parameter server driven by flags (PaddlePaddle v1 style)", runPServerFlags},
	{"train", "a trainer driven by flags (PaddlePaddle v1 style); --local=1 trains alone", runTrainFlags},
	{"gen-data", "write the synthetic data set as text lines", runGenData},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes a command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], streams{stdout, stderr})
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "paddlejob-examples %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "paddlejob-examples %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "paddlejob-examples: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: paddlejob-examples <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'paddlejob-examples <command> -h' for a command's flags.")
}

// usageError is a bad command line or environment, as opposed to a failure
// while training.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }
