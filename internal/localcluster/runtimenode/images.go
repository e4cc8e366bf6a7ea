package runtimenode

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/ociimage"
)

// The node's images, built on this machine and cached: the sandbox image
// (the pause program alone) and a Debian base image from Debian's
// packages (mmdebstrap, minbase).
const (
	// BaseImage is Debian 12 with its essential and required packages.
	BaseImage = "docker.io/library/debian:bookworm"
	// debianSuite and debianMirror are what the base image is made of.
	debianSuite  = "bookworm"
	debianMirror = "http://deb.debian.org/debian"
	// sourceDateEpoch fixes the files' times in the base image, so two
	// builds from the same packages give the same layer.
	sourceDateEpoch = "1700000000"
)

// BuildImages returns the OCI archives of the node's images, building the
// missing ones into <cache>/images first.
func BuildImages(ctx context.Context, cache string, rt kubebin.NodeRuntime, log io.Writer) ([]string, error) {
	dir := filepath.Join(cache, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := fsutil.Lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	pause := filepath.Join(dir, "pause.oci.tar")
	if err := buildOnce(pause, func(layer string) (ociimage.Image, error) {
		return ociimage.Image{Name: SandboxImage, Entrypoint: []string{"/pause"}}, pauseLayer(layer, rt.Pause)
	}); err != nil {
		return nil, fmt.Errorf("the sandbox image: %w", err)
	}
	base := filepath.Join(dir, "debian-"+debianSuite+".oci.tar")
	if err := buildOnce(base, func(layer string) (ociimage.Image, error) {
		fmt.Fprintf(log, "building the base image %s from Debian's packages (once; cached in %s)...\n", BaseImage, dir)
		start := time.Now()
		err := debootstrap(ctx, layer)
		fmt.Fprintf(log, "built %s in %s\n", BaseImage, time.Since(start).Round(time.Second))
		return ociimage.Image{Name: BaseImage, Cmd: []string{"bash"},
			Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}, err
	}); err != nil {
		return nil, fmt.Errorf("the base image %s: %w", BaseImage, err)
	}
	return []string{pause, base}, nil
}

// buildOnce writes archive unless it exists: make writes the image's layer
// to the file it is given and returns the image.
func buildOnce(archive string, make func(layer string) (ociimage.Image, error)) error {
	if _, err := os.Stat(archive); err == nil {
		return nil
	}
	layer := archive + ".layer.tmp"
	defer os.Remove(layer)
	img, err := make(layer)
	if err != nil {
		return err
	}
	img.Layer = layer
	tmp := archive + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = ociimage.Write(f, img)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, archive)
}

func pauseLayer(layer, program string) error {
	f, err := os.Create(layer)
	if err != nil {
		return err
	}
	defer f.Close()
	l := ociimage.NewLayer(f)
	if err := l.File("pause", 0o755, program); err != nil {
		return err
	}
	return l.Close()
}

// debootstrap writes a minimal Debian root file system as a tar, with no
// device nodes (the runtime makes a container's /dev).
func debootstrap(ctx context.Context, out string) error {
	bin, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return fmt.Errorf("building it needs mmdebstrap (apt-get install mmdebstrap; hack/setup.sh installs it): %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "--variant=minbase", "--format=tar", "--skip=output/dev", "--quiet", debianSuite, out, debianMirror)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+sourceDateEpoch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mmdebstrap: %w\n%s", err, lastLines(stderr.String(), 20))
	}
	return nil
}

// importImages imports the node's images into containerd's k8s.io
// namespace, the one its CRI plugin serves the kubelet from.
func (c Config) importImages(ctx context.Context) error {
	for _, archive := range c.Images {
		cmd := exec.CommandContext(ctx, c.Runtime.Binary("ctr"), "--address", c.ContainerdSocket(), "--namespace", "k8s.io",
			"images", "import", archive)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("importing %s into containerd: %w\n%s", archive, err, lastLines(string(out), 20))
		}
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
