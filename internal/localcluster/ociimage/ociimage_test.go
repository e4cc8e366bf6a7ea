package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
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
	img := Image{Name: "example.com/tools/prog:1", Layer: layer, Entrypoint: []string{"/bin/prog"}}
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
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != digest || index.Manifests[0].Annotations["io.containerd.image.name"] != img.Name {
		t.Fatalf("index %+v, want one manifest %s named %s", index.Manifests, digest, img.Name)
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
