package runtimenode

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/localcluster/ociimage"
)

// Build contexts become images over the node's Paddle images: the
// Dockerfile's files in a layer of their own over the base's, its ENV over
// the base's, its WORKDIR and ENTRYPOINT; a context FROM another context's
// image is built after it, on its variant of the same release; an alias is
// the Paddle image under other names.
func TestBuildContextImages(t *testing.T) {
	cache, home := t.TempDir(), t.TempDir()
	paddleLayers := map[string]string{}
	for _, release := range PaddleReleases {
		paddleLayers[release] = writeBaseArchive(t, cache, release)
	}
	trainer := writeContext(t, "FROM paddlepaddle/paddle:3.0.0\nCOPY app /app\nWORKDIR /app\nENV MODE=train\nENTRYPOINT [\"python3\", \"train.py\"]\n",
		map[string]string{"app/train.py": "print('training')\n"})
	onTrainer := writeContext(t, "FROM example.com/trainer:v1\nCOPY start.sh /root/start.sh\nWORKDIR /\n",
		map[string]string{"start.sh": "#!/bin/sh\n"})
	tool := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	built, err := BuildContextImages(cache, home, []string{"paddlepaddle/paddle", "example.com/paddle-ubuntu"}, []ContextImage{
		{Context: onTrainer, Names: []string{"example.com/job:v1"}, Bin: map[string]string{"tool": tool}},
		{Context: onTrainer, Names: []string{"example.com/job:2.6.2"}, Release: "2.6.2"},
		{Context: trainer, Names: []string{"example.com/trainer:v1", "example.com/trainer:latest"}},
		{Context: trainer, Names: []string{"example.com/trainer:2.6.2"}, Release: "2.6.2"},
	}, []ImageAlias{{Names: []string{"example.com/paddle-ubuntu:2.0.0-18.04"}, Release: "2.6.2"}})
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]builtImage{}
	var order []string
	for _, b := range built {
		img := readBuiltImage(t, b.Archive)
		if !slices.Equal(img.names, b.Names) {
			t.Errorf("%s holds %v, reported as %v", b.Archive, img.names, b.Names)
		}
		for _, n := range img.names {
			images[n] = img
		}
		order = append(order, img.names[0])
	}
	want := []string{"example.com/trainer:v1", "example.com/job:v1", "example.com/trainer:2.6.2", "example.com/job:2.6.2", "example.com/paddle-ubuntu:2.0.0-18.04"}
	if !slices.Equal(order, want) {
		t.Fatalf("archives in the order %v, want %v (each after its base)", order, want)
	}

	tr := images["example.com/trainer:latest"]
	if tr.base.WorkingDir() != "/app" || !slices.Equal(tr.base.Entrypoint(), []string{"python3", "train.py"}) ||
		!slices.Equal(tr.base.Env(), []string{"MODE=train", "PATH=/opt/paddle/bin:/usr/bin"}) {
		t.Errorf("trainer: workdir %q entrypoint %v env %v", tr.base.WorkingDir(), tr.base.Entrypoint(), tr.base.Env())
	}
	if layers := tr.base.Layers(); len(layers) != 2 || layers[0] != paddleLayers["3.0.0"] || !slices.Contains(tr.files, "app/train.py") {
		t.Errorf("trainer: layers %v (want the 3.0.0 Paddle layer %s, then its own), files %v", layers, paddleLayers["3.0.0"], tr.files)
	}
	if layers := images["example.com/trainer:2.6.2"].base.Layers(); len(layers) != 2 || layers[0] != paddleLayers["2.6.2"] {
		t.Errorf("trainer:2.6.2 is not on the 2.6.2 Paddle layer: %v", layers)
	}
	job, job262 := images["example.com/job:v1"], images["example.com/job:2.6.2"]
	if layers := job.base.Layers(); len(layers) != 3 || layers[1] != tr.base.Layers()[1] || !slices.Contains(job.files, "usr/local/bin/tool") || !slices.Contains(job.files, "root/start.sh") {
		t.Errorf("job: layers %v, want the trainer's two then its own holding root/start.sh and usr/local/bin/tool: %v", layers, job.files)
	}
	if job.base.WorkingDir() != "/" || !slices.Equal(job.base.Entrypoint(), []string{"python3", "train.py"}) {
		t.Errorf("job: workdir %q entrypoint %v, want / and the trainer's", job.base.WorkingDir(), job.base.Entrypoint())
	}
	if layers := job262.base.Layers(); len(layers) != 3 || layers[0] != paddleLayers["2.6.2"] || layers[1] != images["example.com/trainer:2.6.2"].base.Layers()[1] {
		t.Errorf("job:2.6.2 is not on trainer:2.6.2: %v", layers)
	}
	alias := images["example.com/paddle-ubuntu:2.0.0-18.04"]
	if layers := alias.base.Layers(); len(layers) != 1 || layers[0] != paddleLayers["2.6.2"] || len(alias.files) != 0 || !slices.Equal(alias.base.Cmd(), []string{"bash"}) {
		t.Errorf("alias: layers %v files %v cmd %v, want the 2.6.2 Paddle image's", layers, alias.files, alias.base.Cmd())
	}

	_, err = BuildContextImages(cache, home, []string{"paddlepaddle/paddle"}, []ContextImage{
		{Context: writeContext(t, "FROM paddlepaddle/paddle:2.5.0\n", map[string]string{}), Names: []string{"example.com/old:v1"}},
	}, nil)
	if err == nil || !strings.Contains(err.Error(), "example.com/old:v1") || !strings.Contains(err.Error(), strings.Join(PaddleReleases, ", ")) {
		t.Errorf("FROM a release the node has no image of: %v, want the image and the releases named", err)
	}
}

// writeBaseArchive writes a stand-in for a Paddle image's archive, as
// BuildImages writes it, and returns its layer's digest.
func writeBaseArchive(t *testing.T, cache, release string) string {
	t.Helper()
	dir := filepath.Join(cache, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "version")
	if err := os.WriteFile(src, []byte(release), 0o644); err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(t.TempDir(), "layer.tar")
	if err := ociimage.WriteLayerFile(layer, func(l *ociimage.LayerWriter) error { return l.File("opt/paddle/version", 0o644, src) }); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, paddleArchive(release))
	out, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := ociimage.Write(out, ociimage.Image{Names: []string{PaddleImage + release}, Layer: layer, Cmd: []string{"bash"}, Env: []string{"PATH=/opt/paddle/bin:/usr/bin"}}); err != nil {
		t.Fatal(err)
	}
	base, err := ociimage.ReadBase(archive)
	if err != nil {
		t.Fatal(err)
	}
	return base.Layers()[0]
}

func writeContext(t *testing.T, dockerfile string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["Dockerfile"] = dockerfile
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// builtImage is what an archive of BuildContextImages holds.
type builtImage struct {
	names []string
	base  *ociimage.Base
	// files are the paths in its own layer.
	files []string
}

func readBuiltImage(t *testing.T, archive string) builtImage {
	t.Helper()
	base, err := ociimage.ReadBase(archive)
	if err != nil {
		t.Fatal(err)
	}
	img := builtImage{base: base}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	layers := base.Layers()
	own := "blobs/sha256/" + strings.TrimPrefix(layers[len(layers)-1], "sha256:")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return img
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "index.json":
			var idx struct {
				Manifests []struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"manifests"`
			}
			if err := json.NewDecoder(tr).Decode(&idx); err != nil {
				t.Fatal(err)
			}
			for _, m := range idx.Manifests {
				img.names = append(img.names, m.Annotations["io.containerd.image.name"])
			}
		case own:
			lr := tar.NewReader(tr)
			for {
				lh, err := lr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				img.files = append(img.files, strings.TrimSuffix(lh.Name, "/"))
			}
		}
	}
}
