// Command pyenv prints the directory of a pinned Python virtual environment
// other than the Paddle runtime, installing it into the cache the first time
// (internal/localcluster/paddleruntime.EnsureEnv: keyed by the requirements'
// hash and the interpreter, shared by every checkout). Progress goes to
// stderr, the directory to stdout:
//
//	$(go run ./hack/pyenv -name python-sdk -requirements python/requirements.txt)/bin/python -m pytest
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
)

func main() {
	name := flag.String("name", "", "the environment's name: its directory in the cache (required)")
	requirements := flag.String("requirements", "", "the requirements file pinning every package (required)")
	python := flag.String("python", "", "the Python interpreter to build the environment from (default python3 on PATH)")
	flag.Parse()
	if *name == "" || *requirements == "" {
		fmt.Fprintln(os.Stderr, "pyenv: -name and -requirements are required")
		os.Exit(2)
	}
	req, err := os.ReadFile(*requirements)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pyenv:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	env, err := paddleruntime.EnsureEnv(ctx, paddleruntime.Options{Python: *python, Log: os.Stderr}, *name, req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pyenv:", err)
		os.Exit(1)
	}
	fmt.Println(env.Dir)
}
