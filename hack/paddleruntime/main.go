// Command paddleruntime prints the directory of a pinned Python virtual
// environment, installing it into the cache the first time (see
// internal/localcluster/paddleruntime: keyed by the requirements' hash and
// the interpreter, shared by every checkout). Progress goes to stderr, the
// directory to stdout.
//
// Without flags it is the CPU PaddlePaddle runtime the local cluster runs
// ($PADDLEJOB_PADDLE_RUNTIME names one to use instead):
//
//	$(go run ./hack/paddleruntime)/bin/python3 -c 'import paddle; paddle.utils.run_check()'
//
// With -name and -requirements it is another pinned environment, such as
// the Python SDK's test dependencies:
//
//	$(go run ./hack/paddleruntime -name python-sdk -requirements python/requirements.txt)/bin/python -m pytest
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
	python := flag.String("python", "", "the Python interpreter to build the environment from (default python3 on PATH)")
	name := flag.String("name", "", "another pinned environment's name, its directory in the cache (with -requirements)")
	requirements := flag.String("requirements", "", "the requirements file pinning every package of the -name environment")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := ensure(ctx, *python, *name, *requirements)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paddleruntime:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}

func ensure(ctx context.Context, python, name, requirements string) (string, error) {
	opts := paddleruntime.Options{Python: python, Log: os.Stderr}
	switch {
	case name == "" && requirements == "":
		opts.Dir = os.Getenv(paddleruntime.EnvDir)
		rt, err := paddleruntime.Ensure(ctx, opts)
		if err != nil {
			return "", err
		}
		return rt.Dir, nil
	case name == "" || requirements == "":
		return "", fmt.Errorf("-name and -requirements go together")
	}
	req, err := os.ReadFile(requirements)
	if err != nil {
		return "", err
	}
	env, err := paddleruntime.EnsureEnv(ctx, opts, name, req)
	if err != nil {
		return "", err
	}
	return env.Dir, nil
}
