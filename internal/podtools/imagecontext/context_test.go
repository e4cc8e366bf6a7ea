package imagecontext

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/<name>, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s--- want\n%s", name, path, got, want)
	}
}

func TestDockerfileGolden(t *testing.T) {
	tests := []struct {
		golden     string
		base       string
		image      string
		dest       string
		entrypoint string
	}{
		// The paddle.job SDK's word2vec example: ./tools/build_docker.sh ./example/ /example paddlepaddle/paddle yancey1989/paddle-job
		{golden: "word2vec.Dockerfile", base: "paddlepaddle/paddle", image: "yancey1989/paddle-job", dest: "/example/", entrypoint: "python train.py"},
		{golden: "no-entrypoint.Dockerfile", base: "paddlepaddle/paddle:2.6.1", image: "registry.example.com/team/wd:v1", dest: "/workspace/wide_deep"},
		{golden: "quoted-entrypoint.Dockerfile", base: "paddlepaddle/paddle", image: "paddle-job", dest: "/", entrypoint: `sh -c 'exec python train.py --cfg="a b" > /tmp/log 2>&1'`},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got, err := dockerfile(tt.base, tt.image, tt.dest, tt.entrypoint)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, got)
		})
	}
	if _, err := dockerfile("b", "i", "/d", `python 'unterminated`); err == nil || !strings.Contains(err.Error(), "--entrypoint") {
		t.Errorf("a bad entrypoint: error = %v, want one naming --entrypoint", err)
	}
}

// trainerPackage makes a package like the paddle.job SDK's example/word2vec.
func trainerPackage(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "word2vec")
	files := map[string]string{"train.py": "print('train')\n", "prepare.py": "print('prepare')\n", "data/dict.txt": "a 1\n"}
	for name, content := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(src, "train.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("data/dict.txt", filepath.Join(src, "dict.txt")); err != nil {
		t.Fatal(err)
	}
	return src
}

func TestWriteContext(t *testing.T) {
	src := trainerPackage(t)
	out := filepath.Join(t.TempDir(), "ctx")
	opts := Options{Src: src, Dest: "/example/", Base: "paddlepaddle/paddle", Image: "yancey1989/paddle-job", Entrypoint: "python train.py", Out: out}
	if err := Write(opts); err != nil {
		t.Fatal(err)
	}
	df, err := os.ReadFile(filepath.Join(out, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "word2vec.Dockerfile", string(df))
	if got, _ := os.ReadFile(filepath.Join(out, "package", "data", "dict.txt")); string(got) != "a 1\n" {
		t.Errorf("package/data/dict.txt = %q", got)
	}
	if info, err := os.Stat(filepath.Join(out, "package", "train.py")); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("package/train.py lost its mode: %v, %v", info, err)
	}
	if link, err := os.Readlink(filepath.Join(out, "package", "dict.txt")); err != nil || link != "data/dict.txt" {
		t.Errorf("package/dict.txt = %q, %v; want the symlink kept", link, err)
	}

	// Writing again replaces the earlier context.
	if err := os.Remove(filepath.Join(src, "prepare.py")); err != nil {
		t.Fatal(err)
	}
	opts.Entrypoint = ""
	if err := Write(opts); err != nil {
		t.Fatalf("rewriting the context: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "package", "prepare.py")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file removed from --src stayed in the rewritten context")
	}
}

func TestWriteRefusesForeignOut(t *testing.T) {
	src := trainerPackage(t)
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "precious.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(Options{Src: src, Dest: "/example", Base: "paddlepaddle/paddle", Image: "paddle-job", Out: out})
	if err == nil || !strings.Contains(err.Error(), "holds no context written by paddlejob") {
		t.Fatalf("Write() = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(out, "precious.txt")); err != nil {
		t.Errorf("the foreign file is gone: %v", err)
	}
}

func TestWriteValidates(t *testing.T) {
	src := trainerPackage(t)
	file := filepath.Join(src, "train.py")
	valid := Options{Src: src, Dest: "/example", Base: "paddlepaddle/paddle", Image: "paddle-job", Out: filepath.Join(t.TempDir(), "ctx")}
	tests := []struct {
		name   string
		change func(*Options)
		want   []string
	}{
		{"everything missing", func(o *Options) { *o = Options{} },
			[]string{"--src is required", "--dest is required", "--base is required", "--image is required", "--out is required"}},
		{"relative dest", func(o *Options) { o.Dest = "example" }, []string{`--dest="example" must be an absolute path`}},
		{"dest with a blank", func(o *Options) { o.Dest = "/my example" }, []string{`--dest="/my example" must not contain blanks`}},
		{"missing src", func(o *Options) { o.Src = filepath.Join(src, "nope") }, []string{"--src: stat"}},
		{"src is a file", func(o *Options) { o.Src = file }, []string{"is not a directory"}},
		{"bad image", func(o *Options) { o.Image = "Paddle Job" }, []string{`--image="Paddle Job": an image reference has no spaces`}},
		{"digest image", func(o *Options) { o.Image = "paddle@sha256:" + strings.Repeat("0", 64) }, []string{"--image", "not a digest"}},
		{"bad base", func(o *Options) { o.Base = "paddle:" }, []string{`--base="paddle:"`}},
		{"out inside src", func(o *Options) { o.Out = filepath.Join(src, "ctx") }, []string{"lies inside --src"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := valid
			tt.change(&opts)
			err := Write(opts)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Write() error = %v, want one containing %q", err, want)
				}
			}
		})
	}
}
