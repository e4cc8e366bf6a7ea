package runtimenode

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/imageref"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/ociimage"
)

// ContextImage is a Docker build context the node has as an image: its
// Dockerfile read as the process node reads it (COPY, ADD, ENV, WORKDIR,
// ENTRYPOINT, CMD; RUN cannot run), on the node's Paddle image its FROM
// names, the files it adds in a layer of their own.
type ContextImage struct {
	// Context is the build context's directory.
	Context string
	// Names are the references it answers to, each with its tag.
	Names []string
	// Release, when set, is the Paddle release it is built on instead of
	// the one its FROM names (demo-resnet:2.6.2).
	Release string
	// Bin are host files the image holds in /usr/local/bin, by name (the
	// in-pod launcher, which the launcher's Dockerfile leaves to the user to
	// copy in).
	Bin map[string]string
}

// ImageAlias names a Paddle image of the node by other references
// (registry.baidubce.com/paddle-operator/paddle-ubuntu:2.0.0-18.04).
type ImageAlias struct {
	Names   []string
	Release string
}

// contextImagesDir holds a node's context images; they are built again on
// every start, from the contexts the cluster wrote.
const contextImagesDir = "context-images"

// BuiltImage is an archive BuildContextImages wrote and the names of its
// image.
type BuiltImage struct {
	Archive string
	Names   []string
}

// Archives are the images' archives, in order.
func Archives(images []BuiltImage) []string {
	out := make([]string, len(images))
	for i, img := range images {
		out[i] = img.Archive
	}
	return out
}

// BuildContextImages builds the context images and aliases into archives
// under dir and returns them in an order containerd imports them in, each
// after the image it is built on. Their layers of the Paddle images are not
// in them: the Paddle images' archives (cache's) are imported first.
// paddleNames are the repositories that are Paddle itself, whose tag names
// the release (paddlepaddle/paddle:3.0.0).
func BuildContextImages(cache, dir string, paddleNames []string, contexts []ContextImage, aliases []ImageAlias) ([]BuiltImage, error) {
	b := &contextBuild{cache: cache, dir: filepath.Join(dir, contextImagesDir), paddle: map[string]bool{}, byName: map[string]int{}, built: map[int]*ociimage.Base{}}
	if err := os.RemoveAll(b.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, err
	}
	for _, n := range paddleNames {
		b.paddle[familiarName(n)] = true
	}
	b.contexts = contexts
	for i, c := range contexts {
		for _, n := range c.Names {
			full, err := imageref.Full(n)
			if err != nil {
				return nil, err
			}
			b.byName[full] = i
		}
	}
	for i := range contexts {
		if _, err := b.build(i); err != nil {
			return nil, err
		}
	}
	for _, a := range aliases {
		base, err := b.paddleBase(a.Release)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", a.Names[0], err)
		}
		img := ociimage.Image{Names: fullNames(a.Names), Base: base, Entrypoint: base.Entrypoint(), Cmd: base.Cmd(), Env: base.Env(), WorkingDir: base.WorkingDir()}
		if err := b.write(img, nil); err != nil {
			return nil, err
		}
	}
	return b.images, nil
}

type contextBuild struct {
	cache, dir string
	paddle     map[string]bool
	contexts   []ContextImage
	byName     map[string]int
	built      map[int]*ociimage.Base
	building   []int
	images     []BuiltImage
}

// build builds context i (once), first the context image its FROM names.
func (b *contextBuild) build(i int) (*ociimage.Base, error) {
	if base, ok := b.built[i]; ok {
		return base, nil
	}
	c := b.contexts[i]
	if slices.Contains(b.building, i) {
		return nil, fmt.Errorf("image %s: its FROM images lead back to it", c.Names[0])
	}
	b.building = append(b.building, i)
	defer func() { b.building = b.building[:len(b.building)-1] }()

	root, err := os.MkdirTemp(b.dir, "root-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	var base *ociimage.Base
	entry, _, err := node.BuildContextImage(c.Context, root, func(ref string) (node.ImageEntry, bool, error) {
		var fromErr error
		if base, fromErr = b.from(ref, c.Release); fromErr != nil {
			return node.ImageEntry{}, false, fromErr
		}
		env := map[string]string{}
		for _, kv := range base.Env() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		return node.ImageEntry{Command: base.Entrypoint(), Args: base.Cmd(), Env: env, WorkingDir: base.WorkingDir()}, true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", c.Names[0], err)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Bin)) {
		dst := filepath.Join(root, "usr/local/bin", name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := fsutil.CopyTree(c.Bin[name], dst); err != nil {
			return nil, err
		}
	}
	var env []string
	for _, k := range slices.Sorted(maps.Keys(entry.Env)) {
		env = append(env, k+"="+entry.Env[k])
	}
	img := ociimage.Image{Names: fullNames(c.Names), Base: base, Entrypoint: entry.Command, Cmd: entry.Args, Env: env, WorkingDir: entry.WorkingDir}
	if err := b.write(img, &root); err != nil {
		return nil, err
	}
	built, err := ociimage.ReadBase(b.images[len(b.images)-1].Archive)
	if err != nil {
		return nil, err
	}
	b.built[i] = built
	return built, nil
}

// from is the base image a Dockerfile's FROM names: a Paddle image of the
// node (of release, when set), or another context image (its variant of
// release, when it has one).
func (b *contextBuild) from(ref, release string) (*ociimage.Base, error) {
	name, tag := imageref.NameAndTag(ref)
	if b.paddle[name] {
		if release == "" {
			release = tag
		}
		return b.paddleBase(release)
	}
	candidates := []string{ref}
	if release != "" {
		candidates = append([]string{name + ":" + release}, candidates...)
	}
	for _, c := range candidates {
		full, err := imageref.Full(c)
		if err != nil {
			return nil, err
		}
		if i, ok := b.byName[full]; ok {
			return b.build(i)
		}
	}
	return nil, fmt.Errorf("the container-runtime node has no image %s: it has the Paddle images of releases %s and the images of the build contexts it was given", ref, strings.Join(PaddleReleases, ", "))
}

// paddleBase is the node's Paddle image of release.
func (b *contextBuild) paddleBase(release string) (*ociimage.Base, error) {
	if !slices.Contains(PaddleReleases, release) {
		return nil, fmt.Errorf("the container-runtime node has Paddle images of releases %s, not %q", strings.Join(PaddleReleases, ", "), release)
	}
	return ociimage.ReadBase(filepath.Join(b.cache, "images", paddleArchive(release)))
}

// write writes img's archive, its layer the tree at *root when given.
func (b *contextBuild) write(img ociimage.Image, root *string) error {
	archive := filepath.Join(b.dir, fmt.Sprintf("%02d-%s.oci.tar", len(b.images), archiveName(img.Names[0])))
	if root != nil {
		layer := archive + ".layer"
		defer os.Remove(layer)
		if err := ociimage.WriteLayerFile(layer, func(l *ociimage.LayerWriter) error { return l.Tree(*root) }); err != nil {
			return err
		}
		img.Layer = layer
	}
	if err := writeArchive(archive, img); err != nil {
		return fmt.Errorf("image %s: %w", img.Names[0], err)
	}
	b.images = append(b.images, BuiltImage{Archive: archive, Names: img.Names})
	return nil
}

// fullNames are names as containerd stores them.
func fullNames(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		full, err := imageref.Full(n)
		if err != nil {
			full = n
		}
		out = append(out, full)
	}
	return out
}

func familiarName(ref string) string {
	name, _ := imageref.NameAndTag(ref)
	return name
}

// archiveName is a file name for an image reference.
func archiveName(ref string) string {
	return strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(imageref.Familiar(ref))
}
