package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// buildContextImages reads the --build-context values (DIR, or IMAGE=DIR)
// against the job's images: image reference → context directory. A bare
// DIR builds the job's image when it runs one.
func buildContextImages(values []string, job *unstructured.Unstructured) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	jobImages := imagesOf(job)
	out := map[string]string{}
	for _, v := range values {
		image, dir := "", v
		if left, right, ok := strings.Cut(v, "="); ok && right != "" && client.ValidateImage(left) == nil {
			image, dir = left, right
		}
		info, err := os.Stat(dir)
		if err == nil && !info.IsDir() {
			err = fmt.Errorf("%s is not a directory", dir)
		}
		if err == nil {
			_, err = os.Stat(filepath.Join(dir, "Dockerfile"))
		}
		if err != nil {
			return nil, fmt.Errorf("--build-context %s: %w (a build context is a directory holding a Dockerfile)", v, err)
		}
		switch {
		case image == "" && len(jobImages) == 1:
			image = jobImages[0]
		case image == "":
			return nil, fmt.Errorf("--build-context %s: the job runs the images %s; say which one the context builds: --build-context IMAGE=%s",
				v, strings.Join(jobImages, ", "), dir)
		case !slices.Contains(jobImages, image):
			return nil, fmt.Errorf("--build-context %s: the job runs no image %s (it runs %s)", v, image, strings.Join(jobImages, ", "))
		}
		if prev, ok := out[image]; ok && prev != dir {
			return nil, fmt.Errorf("--build-context: two contexts for %s: %s and %s", image, prev, dir)
		}
		out[image] = dir
	}
	return out, nil
}

// imagesOf lists the distinct images of a job's containers, init
// containers included, in order.
func imagesOf(job *unstructured.Unstructured) []string {
	var out []string
	spec, _, _ := unstructured.NestedMap(job.Object, "spec")
	for _, role := range slices.Sorted(maps.Keys(spec)) {
		for _, kind := range []string{"initContainers", "containers"} {
			containers, _, _ := unstructured.NestedSlice(spec, role, "template", "spec", kind)
			for _, c := range containers {
				if m, ok := c.(map[string]any); ok {
					if image, ok := m["image"].(string); ok && image != "" && !slices.Contains(out, image) {
						out = append(out, image)
					}
				}
			}
		}
	}
	return out
}

// checkLocalTarget refuses build contexts for a job that would not go to
// the local cluster: a real one pulls its images.
func checkLocalTarget(ctx context.Context, f *runFlags, images map[string]string) error {
	tgt, err := f.target.resolve()
	if err != nil {
		return err
	}
	st, err := localcluster.Running(ctx, localcluster.Options{Home: f.home})
	first := slices.Sorted(maps.Keys(images))[0]
	elsewhere := fmt.Sprintf("on another cluster, build and push the image (docker build -t %s %s && docker push %s) and run without --build-context", first, images[first], first)
	switch {
	case err != nil:
		return fmt.Errorf("--build-context runs images on the local cluster, and none runs in %s (%v): start it with paddlejob up; %s", f.home, err, elsewhere)
	case strings.TrimSuffix(st.Server(), "/") != strings.TrimSuffix(tgt.Server, "/"):
		return fmt.Errorf("--build-context runs images on the local cluster (%s, in %s), and the job would go to %s: use the local cluster's context (%s); %s",
			st.Server(), f.home, tgt, localcluster.ContextName(f.home), elsewhere)
	}
	return nil
}

// runFromBuildContexts has the local cluster's node run the images from
// their contexts.
func runFromBuildContexts(ctx context.Context, f *runFlags, images map[string]string, w io.Writer) error {
	added, err := localcluster.AddImages(ctx, f.home, images)
	if err != nil {
		return err
	}
	for _, a := range added {
		how := "as before: edits to its files show in the new pods"
		switch {
		case a.Imported:
			how = "built from it now and imported into the nodes' containerd: the new pods run its files as they are"
		case a.New:
			how = "the node restarted to read its Dockerfile"
		}
		fmt.Fprintf(w, "image %s: the local node runs it from the build context %s (%s)", a.Image, a.Context, how)
		if fi, err := os.Stat(a.Output); err == nil && fi.IsDir() {
			fmt.Fprintf(w, "; pods may write in %s", a.Output)
		}
		fmt.Fprintln(w)
	}
	return nil
}
