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
	"os"
	"runtime"
	"time"
)

// Media types of the OCI image specification.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// Image is one image: a name, one layer and what its containers run.
type Image struct {
	// Name is the image's full reference (registry.k8s.io/pause:3.10):
	// what pods name and containerd stores it as.
	Name string
	// Layer is a file holding the layer: a tar of the root filesystem.
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

// Write writes img as an OCI image layout archive to w and returns the
// digest of its manifest. The layer's digest is its file's, so the file
// must not change while Write reads it.
func Write(w io.Writer, img Image) (string, error) {
	layer, err := fileDescriptor(img.Layer)
	if err != nil {
		return "", err
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config": map[string]any{
			"Entrypoint": img.Entrypoint, "Cmd": img.Cmd, "Env": img.Env, "WorkingDir": img.WorkingDir,
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layer.Digest}},
	})
	if err != nil {
		return "", err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeManifest,
		"config":        blobDescriptor(mediaTypeConfig, config),
		"layers":        []descriptor{{MediaType: mediaTypeLayer, Digest: layer.Digest, Size: layer.Size}},
	})
	if err != nil {
		return "", err
	}
	md := blobDescriptor(mediaTypeManifest, manifest)
	md.Platform = &platform{Architecture: runtime.GOARCH, OS: "linux"}
	// containerd names the image after io.containerd.image.name.
	md.Annotations = map[string]string{"io.containerd.image.name": img.Name, "org.opencontainers.image.ref.name": img.Name}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaTypeIndex, "manifests": []descriptor{md}})
	if err != nil {
		return "", err
	}
	a := &archive{tw: tar.NewWriter(w)}
	a.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	a.file("index.json", index)
	a.dir("blobs/")
	a.dir("blobs/sha256/")
	a.blob(config)
	a.blob(manifest)
	a.layer(img.Layer, layer)
	if a.err != nil {
		return "", a.err
	}
	return md.Digest, a.tw.Close()
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

// Close ends the layer's tar.
func (l *LayerWriter) Close() error { return l.tw.Close() }
