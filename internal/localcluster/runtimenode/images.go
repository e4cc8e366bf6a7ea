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
	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
)

// The node's images, built on this machine and cached: the sandbox image
// (the pause program alone), a Debian base image, and the Paddle images,
// Debian's python3 with a virtual environment of a pinned release's
// packages, each from Debian's packages (mmdebstrap, minbase) and PyPI's
// hashed wheels.
const (
	// BaseImage is Debian 12 with its essential and required packages.
	BaseImage = "docker.io/library/debian:bookworm"
	// BusyboxImage is what the operator's wait-for-endpoints init
	// container names (controller's default): Debian's busybox-static,
	// 1.35, under that name.
	BusyboxImage = "docker.io/library/busybox:1.36"
	// PaddleImage is the image of a pinned Paddle release, by version, as
	// pods name it (paddlepaddle/paddle:3.0.0).
	PaddleImage = "docker.io/paddlepaddle/paddle:"
	// debianSuite and debianMirror are what the images are made of.
	debianSuite  = "bookworm"
	debianMirror = "http://deb.debian.org/debian"
	// sourceDateEpoch fixes the files' times (and Python's byte code
	// checks) in the images, so two builds from the same packages give the
	// same layer.
	sourceDateEpoch = "1700000000"
	// paddleVenv is where a Paddle image's packages are: its bin first on
	// PATH, so python is the release's.
	paddleVenv = "/opt/paddle"
)

// PaddleReleases are the releases the node has images of.
var PaddleReleases = []string{"3.0.0", "2.6.2"}

// imagePath is PATH in the images, as in Docker's.
const imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

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
		return ociimage.Image{Names: []string{SandboxImage}, Entrypoint: []string{"/pause"}}, pauseLayer(layer, rt.Pause)
	}); err != nil {
		return nil, fmt.Errorf("the sandbox image: %w", err)
	}
	archives := []string{pause}
	for _, img := range append([]rootfsImage{baseImage(), busyboxImage()}, paddleImages()...) {
		archive := filepath.Join(dir, img.file)
		if err := buildOnce(archive, func(layer string) (ociimage.Image, error) {
			fmt.Fprintf(log, "building the image %s from Debian's packages (once; cached in %s)...\n", img.name, dir)
			start := time.Now()
			err := img.build(ctx, dir, layer)
			fmt.Fprintf(log, "built %s in %s\n", img.name, time.Since(start).Round(time.Second))
			return ociimage.Image{Names: []string{img.name}, Cmd: []string{img.cmd}, Env: []string{"PATH=" + img.path}}, err
		}); err != nil {
			return nil, fmt.Errorf("the image %s: %w", img.name, err)
		}
		archives = append(archives, archive)
	}
	return archives, nil
}

// rootfsImage is an image whose one layer is a Debian root file system.
type rootfsImage struct {
	name, file string
	// variant is mmdebstrap's: minbase, or extract (the packages' files
	// alone, no dpkg, no shell).
	variant string
	// cmd is its containers' default command.
	cmd string
	// include are Debian packages beyond minbase's.
	include []string
	// path is PATH in its containers.
	path string
	// prepare, when set, writes what hooks copy in into dir.
	prepare func(ctx context.Context, dir string) error
	// hooks are mmdebstrap's customize hooks, $1 the root; {dir} is
	// prepare's directory. extractHooks run after the packages are
	// extracted, before any is configured.
	hooks, extractHooks []string
}

func baseImage() rootfsImage {
	return rootfsImage{name: BaseImage, file: "debian-" + debianSuite + ".oci.tar", variant: "minbase", cmd: "bash", path: imagePath}
}

// busyboxImage is busybox alone, each applet a link to it in /bin (made by
// running the static busybox from outside: the root has no shell yet).
func busyboxImage() rootfsImage {
	return rootfsImage{name: BusyboxImage, file: "busybox.oci.tar", variant: "extract", cmd: "sh", path: imagePath,
		include:      []string{"busybox-static"},
		extractHooks: []string{`for a in $("$1/bin/busybox" --list); do [ -e "$1/bin/$a" ] || ln -s busybox "$1/bin/$a"; done`},
	}
}

// paddleImages are the Paddle images: Debian's python3 and the libraries
// the CPU wheel links beside glibc's and libstdc++ (libgomp, OpenMP's
// runtime), and the release's requirements,
// downloaded by this machine's pip (its index and certificates, the wheels'
// hashes checked), installed with no index into a virtual environment of
// the image's python3.
func paddleImages() []rootfsImage {
	var out []rootfsImage
	for _, version := range PaddleReleases {
		out = append(out, rootfsImage{
			name: PaddleImage + version, file: paddleArchive(version), variant: "minbase", cmd: "bash",
			include: []string{"python3", "python3-venv", "ca-certificates", "libgomp1"},
			path:    paddleVenv + "/bin:" + imagePath,
			prepare: func(ctx context.Context, dir string) error { return downloadWheels(ctx, version, dir) },
			hooks: []string{
				`mkdir -p "$1/tmp/wheels"`,
				`sync-in {dir} /tmp/wheels`,
				`chroot "$1" python3 -m venv ` + paddleVenv,
				`chroot "$1" env -i PATH=/usr/bin:/bin SOURCE_DATE_EPOCH=` + sourceDateEpoch + " " + paddleVenv +
					`/bin/python -m pip install --no-index --find-links /tmp/wheels --no-deps --require-hashes --no-cache-dir --progress-bar off --quiet -r /tmp/wheels/requirements.txt`,
				`rm -r "$1/tmp/wheels"`,
			},
		})
	}
	return out
}

// paddleArchive is the file name of a release's image archive.
func paddleArchive(version string) string { return "paddle-" + version + ".oci.tar" }

// downloadWheels downloads a release's pinned wheels into dir, with its
// requirements file beside them.
func downloadWheels(ctx context.Context, version, dir string) error {
	req, err := paddleruntime.Requirements(version)
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "requirements.txt")
	if err := os.WriteFile(file, req, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "python3", "-m", "pip", "download", "--no-deps", "--require-hashes", "--progress-bar", "off", "--quiet", "--dest", dir, "-r", file)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("downloading paddlepaddle %s's wheels: %w\n%s", version, err, lastLines(string(out), 20))
	}
	return nil
}

// build writes the image's root file system as a tar, with no device
// nodes (the runtime makes a container's /dev).
func (img rootfsImage) build(ctx context.Context, cache, out string) error {
	bin, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return fmt.Errorf("building it needs mmdebstrap (apt-get install mmdebstrap; hack/setup.sh installs it): %w", err)
	}
	args := []string{"--variant=" + img.variant, "--format=tar", "--skip=output/dev", "--quiet"}
	for _, h := range img.extractHooks {
		args = append(args, "--extract-hook="+h)
	}
	if len(img.include) > 0 {
		args = append(args, "--include="+strings.Join(img.include, ","))
	}
	if img.prepare != nil {
		dir, err := os.MkdirTemp(cache, "prepare-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := img.prepare(ctx, dir); err != nil {
			return err
		}
		for _, h := range img.hooks {
			args = append(args, "--customize-hook="+strings.ReplaceAll(h, "{dir}", dir))
		}
	}
	cmd := exec.CommandContext(ctx, bin, append(args, debianSuite, out, debianMirror)...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+sourceDateEpoch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mmdebstrap: %w\n%s", err, lastLines(stderr.String(), 20))
	}
	return nil
}

// buildOnce writes archive unless it exists: write writes the image's layer
// to the file it is given and returns the image.
func buildOnce(archive string, write func(layer string) (ociimage.Image, error)) error {
	if _, err := os.Stat(archive); err == nil {
		return nil
	}
	layer := archive + ".layer.tmp"
	defer os.Remove(layer)
	img, err := write(layer)
	if err != nil {
		return err
	}
	img.Layer = layer
	return writeArchive(archive, img)
}

// writeArchive writes img's archive, whole or not at all.
func writeArchive(archive string, img ociimage.Image) error {
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
	return ociimage.WriteLayerFile(layer, func(l *ociimage.LayerWriter) error { return l.File("pause", 0o755, program) })
}

// ImportImages imports OCI archives into the node's containerd, in its
// k8s.io namespace, the one its CRI plugin serves the kubelet from: the
// node's own images when it starts, a user's build contexts while it runs.
func (c Config) ImportImages(ctx context.Context, archives []string) error {
	for _, archive := range archives {
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
