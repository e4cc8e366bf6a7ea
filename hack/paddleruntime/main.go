// Command paddleruntime prints the directory of the pinned CPU PaddlePaddle
// runtime, a Python virtual environment, installing it into the cache the
// first time (see internal/localcluster/paddleruntime). $PADDLEJOB_PADDLE_RUNTIME names a
// runtime to use instead. Progress goes to stderr, the directory to stdout:
//
//	$(go run ./hack/paddleruntime)/bin/python3 -c 'import paddle; paddle.utils.run_check()'
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
	python := flag.String("python", "", "the Python interpreter to build the runtime from (default python3 on PATH)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rt, err := paddleruntime.Ensure(ctx, paddleruntime.Options{
		Dir:    os.Getenv(paddleruntime.EnvDir),
		Python: *python,
		Log:    os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "paddleruntime:", err)
		os.Exit(1)
	}
	fmt.Println(rt.Dir)
}
