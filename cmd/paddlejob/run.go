package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

func init() { register(newRunCmd) }

type runFlags struct {
	target        targetFlags
	file          string
	follow        []string
	replace       bool
	timeout       time.Duration
	buildContexts []string
	home          string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run -f job.yaml",
		Short: "Run a PaddleJob to the end, showing its progress",
		Long: `Submit the PaddleJob of a manifest (other objects in it are created first) and show
its progress until it finishes: pods per role and state, redrawn in place on a terminal,
a line per change otherwise. Exits 0 when the job completes, 1 with the reason when it
fails, 2 on timeout.

It runs on the current kubeconfig context, as kubectl would (paddlejob up makes the
local cluster's current), or the one --kubeconfig and --context name, and says which.
A pod the scheduler cannot place shows why ("needs 5 CPU, the node has 2").

On the local cluster, --build-context DIR runs the job's image from a Docker build
context (a directory with a Dockerfile, as paddlejob init writes): no image to build,
push or name in a table. The node reads the Dockerfile (docs/local-node.md, Local
images); a new image, or a changed Dockerfile, restarts the node to read it, which
waits until no pod runs there; edits to the context's other files show in the next
pods without one. IMAGE=DIR names the image when the job runs several.`,
		Example: `  paddlejob run -f examples/jobs/wide-and-deep.yaml
  paddlejob run -f job.yaml --follow            # stream every pod's log
  paddlejob run -f job.yaml --follow=worker-0   # stream one pod's log
  paddlejob run -f job-ps.yaml --build-context .  # your program, from its build context
  paddlejob run -f job.yaml --context prod -n training`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runJob(cmd, &f) },
	}
	f.target.bind(cmd)
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "manifest with the PaddleJob (- for stdin)")
	cmd.Flags().StringSliceVar(&f.follow, "follow", nil, "stream the logs of these pods (all, a role like worker, or pods like worker-0), each line prefixed, until the job ends (then at most 5s more for what they still hold)")
	cmd.Flags().Lookup("follow").NoOptDefVal = "all"
	cmd.Flags().BoolVar(&f.replace, "replace", false, "delete a job of the same name first")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "give up waiting after this long (the job keeps running)")
	cmd.Flags().StringArrayVar(&f.buildContexts, "build-context", nil, "local cluster: run the job's image from this Docker build context, DIR or IMAGE=DIR (repeatable)")
	cmd.Flags().StringVar(&f.home, "home", localcluster.DefaultHome(), "with --build-context: the local cluster's state directory ($PADDLEJOB_HOME)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runJob(cmd *cobra.Command, f *runFlags) error {
	ctx := cmd.Context()
	objs, err := readManifests(cmd, f.file)
	if err != nil {
		return err
	}
	job, others, err := splitManifests(f.file, objs)
	if err != nil {
		return err
	}
	// The API server stores any image string; a bad one would fail every
	// pod's pull (InvalidImageName): say so before anything is created.
	for _, image := range imagesOf(job) {
		if err := client.ValidateImage(image); err != nil {
			return fmt.Errorf("%s: PaddleJob %s: image %q: %w", f.file, job.GetName(), image, err)
		}
	}
	images, err := buildContextImages(f.buildContexts, job)
	if err != nil {
		return err
	}
	if len(images) > 0 {
		if err := checkLocalTarget(ctx, f, images); err != nil {
			return err
		}
	}
	if f.target.namespace != "" {
		job.SetNamespace(f.target.namespace)
	}
	ns := job.GetNamespace()
	if ns == "" {
		ns = f.target.ns()
	}

	c, err := f.target.client(cmd)
	if err != nil {
		return err
	}
	applier, err := kube.NewApplier(c.Config())
	if err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	for _, o := range others {
		if _, err := applier.Create(ctx, o, ns); err != nil {
			switch {
			case apierrors.IsAlreadyExists(err):
				fmt.Fprintf(errOut, "%s %s exists; using it\n", o.GetKind(), o.GetName())
			case strings.Contains(err.Error(), "does not serve this kind"):
				fmt.Fprintf(errOut, "warning: skipping %s %s: %v\n", o.GetKind(), o.GetName(), err)
			default:
				return err
			}
		}
	}
	if f.replace {
		if err := replaceJob(ctx, c, ns, job.GetName()); err != nil {
			return err
		}
	}
	if len(images) > 0 {
		if err := runFromBuildContexts(ctx, f, images, errOut); err != nil {
			return err
		}
	}
	if _, err := applier.Create(ctx, job, ns); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("PaddleJob %s/%s already exists: delete it (paddlejob delete %s) or use --replace", ns, job.GetName(), job.GetName())
		}
		return err
	}
	fmt.Fprintf(errOut, "created PaddleJob %s/%s in %s\n", ns, job.GetName(), f.target.where())
	return follow(ctx, c, f, ns, job.GetName(), out, errOut)
}

// splitManifests finds the one PaddleJob of file's objects, and the others
// (created first: its ConfigMaps, Secrets, PVCs...).
func splitManifests(file string, objs []*unstructured.Unstructured) (job *unstructured.Unstructured, others []*unstructured.Unstructured, err error) {
	for _, o := range objs {
		if o.GetKind() == "PaddleJob" && o.GroupVersionKind().Group == paddlev1.GroupVersion.Group {
			if job != nil {
				return nil, nil, fmt.Errorf("%s holds more than one PaddleJob: run them one at a time", file)
			}
			job = o
			continue
		}
		others = append(others, o)
	}
	if job == nil {
		return nil, nil, fmt.Errorf("%s holds no PaddleJob", file)
	}
	return job, others, nil
}

func replaceJob(ctx context.Context, c *client.Client, ns, name string) error {
	if err := c.Delete(ctx, ns, name); err != nil {
		if apierrors.IsNotFound(errors.Unwrap(err)) || strings.Contains(err.Error(), "not found") {
			return nil
		}
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := c.Get(ctx, ns, name); err != nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("PaddleJob %s/%s is still being deleted", ns, name)
}

func readManifests(cmd *cobra.Command, file string) ([]*unstructured.Unstructured, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(cmd.InOrStdin())
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	objs, err := kube.DecodeManifests(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objs, nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
