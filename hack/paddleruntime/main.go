// Command paddleruntime prints the directory of a pinned Python virtual
// environment, installing it into the cache the first time (see
// internal/localcluster/paddleruntime: keyed by the requirements' hash and
// the interpreter, shared by every checkout). Progress goes to stderr, the
// directory to stdout.
//
// Without flags it is the default CPU PaddlePaddle runtime the local cluster
// runs ($PADDLEJOB_PADDLE_RUNTIME names one to use instead):
//
//	$(go run ./hack/paddleruntime)/bin/python3 -c 'import paddle; paddle.utils.run_check()'
//
// -release names another pinned release (internal/localcluster/paddleruntime/pins);
// -all installs every pinned release, as the local cluster does, and prints the
// default's directory (make paddle-runtime):
//
//	$(go run ./hack/paddleruntime -release 2.6.2)/bin/python3 train.py
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
	release := flag.String("release", "", "a pinned Paddle release other than the default, such as 2.6.2")
	all := flag.Bool("all", false, "install every pinned Paddle release; print the default's directory")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var dir string
	var err error
	switch {
	case *all || *release != "":
		dir, err = ensureReleases(ctx, *python, *release, *all)
	default:
		dir, err = ensure(ctx, *python, *name, *requirements)
	}
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

// ensureReleases installs one pinned release, or all of them, and returns
// the directory of the one asked for (the default with -all).
func ensureReleases(ctx context.Context, python, release string, all bool) (string, error) {
	opts := paddleruntime.Options{Python: python, Log: os.Stderr, Dir: os.Getenv(paddleruntime.EnvDir)}
	if release == "" {
		release = paddleruntime.DefaultRelease
	}
	if !all {
		rt, err := paddleruntime.EnsureRelease(ctx, opts, release)
		if err != nil {
			return "", err
		}
		return rt.Dir, nil
	}
	rts, err := paddleruntime.EnsureAll(ctx, opts)
	if err != nil {
		return "", err
	}
	for _, rt := range rts {
		if opts.Dir != "" || rt.PaddleVersion == release {
			return rt.Dir, nil
		}
	}
	return "", fmt.Errorf("no runtime of Paddle %s among those installed", release)
}
