// Command paddlejob runs PaddlePaddle training jobs on Kubernetes: on any
// cluster through the PaddleJob operator, or on this machine through a local
// cluster whose pods are sandboxed processes. Installed as kubectl-paddlejob
// it is also a kubectl plugin (`kubectl paddlejob ...`).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/paddlejob/paddlejob/internal/podtools/podcmd"
)

func main() {
	if filepath.Base(os.Args[0]) == podcmd.LauncherName {
		// This binary in a local cluster's image, standing in for the
		// launcher that was not built beside it (go install).
		podcmd.Main(podcmd.Root(podcmd.LauncherName))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		var exit exitError
		if asExit(err, &exit) {
			if exit.msg != "" {
				fmt.Fprintln(os.Stderr, "paddlejob:", exit.msg)
			}
			os.Exit(exit.code)
		}
		fmt.Fprintln(os.Stderr, "paddlejob:", err)
		os.Exit(1)
	}
}
