package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteIsALayoutContainerdReads: the archive holds oci-layout, an
// index naming the image as containerd names it, and every blob under its
// digest; the same inputs give the same bytes.
func TestWriteIsALayoutContainerdReads(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(dir, "layer.tar")
	f, err := os.Create(layer)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLayer(f)
	if err := l.Dir("bin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.File("bin/prog", 0o755, prog); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	img := Image{Names: []string{"example.com/tools/prog:1"}, Layer: layer, Entrypoint: []string{"/bin/prog"}}
	var first, second bytes.Buffer
	digest, err := Write(&first, img)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(&second, img); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("two writes of the same image differ")
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&first)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != digest || index.Manifests[0].Annotations["io.containerd.image.name"] != img.Names[0] {
		t.Fatalf("index %+v, want one manifest %s named %s", index.Manifests, digest, img.Names[0])
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")], &manifest); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(manifest.Layers, manifest.Config) {
		if blob, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]; !ok || int64(len(blob)) != d.Size {
			t.Errorf("blob %s (%d bytes) missing or of another size", d.Digest, d.Size)
		}
	}
	var config struct {
		Config struct{ Entrypoint []string }
	}
	if err := json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(manifest.Config.Digest, "sha256:")], &config); err != nil {
		t.Fatal(err)
	}
	if len(config.Config.Entrypoint) != 1 || config.Config.Entrypoint[0] != "/bin/prog" {
		t.Errorf("entrypoint %v", config.Config.Entrypoint)
	}
}

// An image built on another names the base's layers before its own and
// holds only its own; each of its names is the same manifest; ReadBase
// gives what the base's containers run.
func TestImageOnABase(t *testing.T) {
	dir := t.TempDir()
	baseLayer, ownLayer := writeLayer(t, dir, "base", "python"), writeLayer(t, dir, "own", "train.py")
	baseArchive := filepath.Join(dir, "base.oci.tar")
	f, err := os.Create(baseArchive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(f, Image{Names: []string{"example.com/paddle:3"}, Layer: baseLayer, Cmd: []string{"bash"}, Env: []string{"PATH=/opt/bin"}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	base, err := ReadBase(baseArchive)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(base.Env(), []string{"PATH=/opt/bin"}) || !slices.Equal(base.Cmd(), []string{"bash"}) {
		t.Errorf("base env %v cmd %v, want the base's", base.Env(), base.Cmd())
	}
	names := []string{"example.com/demo:v1", "example.com/demo:latest"}
	var out bytes.Buffer
	digest, err := Write(&out, Image{Names: names, Base: base, Layer: ownLayer, Env: append(base.Env(), "A=1"), Entrypoint: []string{"python3", "train.py"}})
	if err != nil {
		t.Fatal(err)
	}
	files := readArchive(t, &out)
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	for i, m := range idx.Manifests {
		if m.Digest != digest || i >= len(names) || m.Annotations["io.containerd.image.name"] != names[i] {
			t.Errorf("index entry %d %+v, want manifest %s named %s", i, m, digest, names)
		}
	}
	var mf manifest
	if err := json.Unmarshal(files[blobName(digest)], &mf); err != nil {
		t.Fatal(err)
	}
	baseDesc, ownDesc := descriptorOf(t, baseLayer), descriptorOf(t, ownLayer)
	if len(mf.Layers) != 2 || mf.Layers[0].Digest != baseDesc || mf.Layers[1].Digest != ownDesc {
		t.Fatalf("layers %+v, want the base's %s then its own %s", mf.Layers, baseDesc, ownDesc)
	}
	if _, ok := files[blobName(baseDesc)]; ok {
		t.Error("the base's layer is in the archive")
	}
	if _, ok := files[blobName(ownDesc)]; !ok {
		t.Error("the image's own layer is not in the archive")
	}
	var cfg imageConfig
	if err := json.Unmarshal(files[blobName(mf.Config.Digest)], &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.RootFS.DiffIDs, []string{baseDesc, ownDesc}) || !slices.Equal(cfg.Config.Env, []string{"PATH=/opt/bin", "A=1"}) {
		t.Errorf("config %+v", cfg)
	}
}

func writeLayer(t *testing.T, dir, name, file string) string {
	t.Helper()
	src := filepath.Join(dir, name+".src")
	if err := os.WriteFile(src, []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(dir, name+".tar")
	if err := WriteLayerFile(layer, func(l *LayerWriter) error { return l.File(file, 0o644, src) }); err != nil {
		t.Fatal(err)
	}
	return layer
}

func descriptorOf(t *testing.T, file string) string {
	t.Helper()
	d, err := fileDescriptor(file)
	if err != nil {
		t.Fatal(err)
	}
	return d.Digest
}

func blobName(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }

func readArchive(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
}
