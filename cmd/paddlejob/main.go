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
	"syscall"
)

func main() {
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
