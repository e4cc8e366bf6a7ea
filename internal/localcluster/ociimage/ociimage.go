// Package ociimage writes container images as OCI image layout archives,
// the form `ctr images import` reads, so that the container-runtime node
// gets its images with no registry: each image is one uncompressed layer
// and a config, written deterministically (the same inputs give the same
// digests).
package ociimage

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

// Media types of the OCI image specification.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// Image is one image: its names, its layers and what its containers run.
type Image struct {
	// Names are the image's full references (registry.k8s.io/pause:3.10):
	// what pods name and containerd stores it as, all one image.
	Names []string
	// Base, when set, is the image this one is built on: its layers come
	// first, named by the archive without being in it (see ReadBase).
	Base *Base
	// Layer is a file holding the image's own layer, a tar of the files it
	// adds; "" for an image that only renames or reconfigures its base.
	Layer string
	// Entrypoint, Cmd, Env and WorkingDir are the image's defaults.
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// imageConfig is the part of an OCI image configuration this package
// writes and reads.
type imageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
}

type containerConfig struct {
	Entrypoint []string `json:"Entrypoint"`
	Cmd        []string `json:"Cmd"`
	Env        []string `json:"Env"`
	WorkingDir string   `json:"WorkingDir"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// Write writes img as an OCI image layout archive to w and returns the
// digest of its manifest. The layer's digest is its file's, so the file
// must not change while Write reads it. The base's layers are not written:
// the archive is imported where its base was imported before.
func Write(w io.Writer, img Image) (string, error) {
	var layers []descriptor
	var diffIDs []string
	if img.Base != nil {
		layers = slices.Clone(img.Base.layers)
		diffIDs = slices.Clone(img.Base.diffIDs)
	}
	var own descriptor
	if img.Layer != "" {
		var err error
		if own, err = fileDescriptor(img.Layer); err != nil {
			return "", err
		}
		// Uncompressed: the layer's digest is its diff ID.
		layers, diffIDs = append(layers, own), append(diffIDs, own.Digest)
	}
	config, err := json.Marshal(imageConfig{
		Architecture: runtime.GOARCH, OS: "linux",
		Config: containerConfig{Entrypoint: img.Entrypoint, Cmd: img.Cmd, Env: img.Env, WorkingDir: img.WorkingDir},
		RootFS: rootFS{Type: "layers", DiffIDs: diffIDs},
	})
	if err != nil {
		return "", err
	}
	mf, err := json.Marshal(manifest{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: blobDescriptor(mediaTypeConfig, config), Layers: layers})
	if err != nil {
		return "", err
	}
	md := blobDescriptor(mediaTypeManifest, mf)
	md.Platform = &platform{Architecture: runtime.GOARCH, OS: "linux"}
	idx := index{SchemaVersion: 2, MediaType: mediaTypeIndex}
	for _, name := range img.Names {
		d := md
		// containerd names the image after io.containerd.image.name.
		d.Annotations = map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name}
		idx.Manifests = append(idx.Manifests, d)
	}
	indexJSON, err := json.Marshal(idx)
	if err != nil {
		return "", err
	}
	a := &archive{tw: tar.NewWriter(w)}
	a.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	a.file("index.json", indexJSON)
	a.dir("blobs/")
	a.dir("blobs/sha256/")
	a.blob(config)
	a.blob(mf)
	if img.Layer != "" {
		a.layer(img.Layer, own)
	}
	if a.err != nil {
		return "", a.err
	}
	return md.Digest, a.tw.Close()
}

// Base is an image of an archive Write wrote, for images built on it: its
// layers and its defaults.
type Base struct {
	layers  []descriptor
	diffIDs []string
	config  containerConfig
}

// Env, Entrypoint, Cmd and WorkingDir are the base image's defaults, which
// an image built on it starts from.
func (b *Base) Env() []string        { return slices.Clone(b.config.Env) }
func (b *Base) Entrypoint() []string { return slices.Clone(b.config.Entrypoint) }
func (b *Base) Cmd() []string        { return slices.Clone(b.config.Cmd) }
func (b *Base) WorkingDir() string   { return b.config.WorkingDir }

// Layers are the digests of the base's layers, bottom first.
func (b *Base) Layers() []string {
	out := make([]string, len(b.layers))
	for i, l := range b.layers {
		out[i] = l.Digest
	}
	return out
}

// ReadBase reads the image of an archive Write wrote. Write puts the index,
// config and manifest before the layer, so it stops before the layer.
func ReadBase(archive string) (*Base, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var idx index
	blobs := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: no image in it: %w", archive, err)
		}
		const small = 1 << 20 // index, configs and manifests; never a layer
		if h.Typeflag != tar.TypeReg || h.Size > small {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		if h.Name == "index.json" {
			if err := json.Unmarshal(data, &idx); err != nil || len(idx.Manifests) == 0 {
				return nil, fmt.Errorf("%s: its index.json names no image", archive)
			}
			continue
		}
		blobs["sha256:"+path.Base(h.Name)] = data
		if len(idx.Manifests) == 0 {
			continue
		}
		var mf manifest
		if err := json.Unmarshal(blobs[idx.Manifests[0].Digest], &mf); err != nil || blobs[mf.Config.Digest] == nil {
			continue // not both read yet
		}
		var cfg imageConfig
		if err := json.Unmarshal(blobs[mf.Config.Digest], &cfg); err != nil {
			return nil, fmt.Errorf("%s: its config: %w", archive, err)
		}
		return &Base{layers: mf.Layers, diffIDs: cfg.RootFS.DiffIDs, config: cfg.Config}, nil
	}
}

func blobDescriptor(mediaType string, data []byte) descriptor {
	sum := sha256.Sum256(data)
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}
}

func fileDescriptor(path string) (descriptor, error) {
	f, err := os.Open(path)
	if err != nil {
		return descriptor{}, fmt.Errorf("the image's layer: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return descriptor{}, fmt.Errorf("reading the image's layer %s: %w", path, err)
	}
	return descriptor{MediaType: mediaTypeLayer, Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}

// archive writes the layout's entries with fixed owners and times; the
// first error sticks.
type archive struct {
	tw  *tar.Writer
	err error
}

func (a *archive) header(name string, typ byte, mode, size int64) {
	if a.err == nil {
		a.err = a.tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: time.Unix(0, 0), Format: tar.FormatPAX})
	}
}

func (a *archive) dir(name string) { a.header(name, tar.TypeDir, 0o755, 0) }

func (a *archive) file(name string, data []byte) {
	a.header(name, tar.TypeReg, 0o644, int64(len(data)))
	if a.err == nil {
		_, a.err = a.tw.Write(data)
	}
}

func (a *archive) blob(data []byte) {
	sum := sha256.Sum256(data)
	a.file("blobs/sha256/"+hex.EncodeToString(sum[:]), data)
}

func (a *archive) layer(path string, d descriptor) {
	f, err := os.Open(path)
	if err != nil {
		a.err = err
		return
	}
	defer f.Close()
	a.header("blobs/sha256/"+d.Digest[len("sha256:"):], tar.TypeReg, 0o644, d.Size)
	if a.err == nil {
		_, a.err = io.CopyN(a.tw, f, d.Size)
	}
}

// LayerWriter writes a layer's tar: entries with root owners and the epoch
// as their time, so that the same files give the same digest.
type LayerWriter struct{ tw *tar.Writer }

// WriteLayerFile writes a layer to the file path: add adds its entries.
func WriteLayerFile(path string, add func(*LayerWriter) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	l := NewLayer(f)
	if err := add(l); err != nil {
		return err
	}
	if err := l.Close(); err != nil {
		return err
	}
	return f.Close()
}

// NewLayer starts a layer written to w; Close ends it.
func NewLayer(w io.Writer) *LayerWriter { return &LayerWriter{tw: tar.NewWriter(w)} }

// Dir adds a directory.
func (l *LayerWriter) Dir(name string, mode int64) error {
	return l.tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX})
}

// File adds a regular file with the contents of src.
func (l *LayerWriter) File(name string, mode int64, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := l.tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: st.Size(), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(l.tw, f)
	return err
}

// Symlink adds a symbolic link to target.
func (l *LayerWriter) Symlink(name, target string) error {
	return l.tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777, ModTime: time.Unix(0, 0), Format: tar.FormatPAX})
}

// Tree adds everything under root, at the same paths below the layer's
// root, in lexical order: directories, regular files (their permission
// bits kept) and symlinks.
func (l *LayerWriter) Tree(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		name, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name = filepath.ToSlash(name)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(info.Mode().Perm())
		switch {
		case d.IsDir():
			return l.Dir(name, mode)
		case d.Type().IsRegular():
			return l.File(name, mode, p)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return l.Symlink(name, target)
		}
		return fmt.Errorf("%s: %s files cannot be in an image layer", p, d.Type())
	})
}

// Close ends the layer's tar.
func (l *LayerWriter) Close() error { return l.tw.Close() }
