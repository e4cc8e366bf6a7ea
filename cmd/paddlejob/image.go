package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/podtools/imagecontext"
)

func init() { register(newImageCmd) }

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build runtime images that add a trainer package to a PaddlePaddle image",
	}
	cmd.AddCommand(newImageContextCmd())
	return cmd
}

// exitNoDockerEngine is the exit code of `image context --build` when no
// Docker engine answers: the context is written, the image is not built.
const exitNoDockerEngine = 3

func newImageContextCmd() *cobra.Command {
	opts := imagecontext.Options{Out: "image-context"}
	var build bool
	cmd := &cobra.Command{
		Use:   "context --src DIR --dest /abs/path --base IMAGE --image NAME[:tag] [--entrypoint CMD] [--out DIR] [--build]",
		Short: "Write a Docker build context that copies a trainer package onto a base image (the paddle.job SDK's build_docker.sh)",
		Long: `Write a Docker build context into --out: a Dockerfile (FROM --base, COPY the package to --dest,
WORKDIR --dest, ENTRYPOINT --entrypoint in exec form when given) and a copy of --src under package/.
--out must be missing, empty, or a context this command wrote before, which is replaced.
A .dockerignore in --src is copied but not applied.

With --build it then runs 'docker build -t IMAGE OUT' if a Docker engine answers 'docker info'.
When none does, it says so and how to build the context elsewhere, and exits with code 3.`,
		Example: `  paddlejob image context --src ./example/ --dest /example --base paddlepaddle/paddle \
    --image yancey1989/paddle-job --entrypoint "python train.py" --out ./paddle-job-context --build`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := imagecontext.Write(opts); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "wrote the build context for %s to %s (Dockerfile, package/)\n", opts.Image, opts.Out)
			if !build {
				fmt.Fprintf(out, "build it with: docker build -t %s %s\n", opts.Image, opts.Out)
				return nil
			}
			err := imagecontext.Build(cmd.Context(), opts.Out, opts.Image, out, cmd.ErrOrStderr())
			if errors.Is(err, imagecontext.ErrNoDockerEngine) {
				return exitError{code: exitNoDockerEngine, msg: fmt.Sprintf(
					"%v; the context in %s is complete: copy it to a machine with Docker and run: docker build -t %s <context dir>",
					err, opts.Out, opts.Image)}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "built %s; push it with: docker push %s\n", opts.Image, opts.Image)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Src, "src", "", "the trainer package directory on this host")
	f.StringVar(&opts.Dest, "dest", "", "absolute path of the package in the image (also the working directory)")
	f.StringVar(&opts.Base, "base", "", "the PaddlePaddle image to build on, e.g. paddlepaddle/paddle:2.6.1")
	f.StringVar(&opts.Image, "image", "", "the runtime image to build, NAME[:tag]")
	f.StringVar(&opts.Entrypoint, "entrypoint", "", `the image's entrypoint, e.g. "python train.py" (split like a shell would)`)
	f.StringVar(&opts.Out, "out", opts.Out, "directory to write the build context to")
	f.BoolVar(&build, "build", false, "also run docker build when a Docker engine is available (exit code 3 when none is)")
	return cmd
}
