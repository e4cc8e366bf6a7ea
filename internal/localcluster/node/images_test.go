package node

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseImageTable(t *testing.T) {
	data := []byte(`images:
  registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1:
    command: ["/abs/path/paddlejob-examples", "wide-and-deep"]
  paddlepaddle/paddle:
    command: ["/usr/bin/python3"]
    overrideCommand: true
    env: {PYTHONUNBUFFERED: "1"}
    workingDir: /work
`)
	file, err := parseImageTable(data)
	if err != nil {
		t.Fatal(err)
	}
	got := file.Images
	want := map[string]ImageEntry{
		"registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1": {Command: []string{"/abs/path/paddlejob-examples", "wide-and-deep"}},
		"paddlepaddle/paddle": {Command: []string{"/usr/bin/python3"}, OverrideCommand: true, Env: map[string]string{"PYTHONUNBUFFERED": "1"}, WorkingDir: "/work"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := parseImageTable([]byte("images:\n  x:\n    comand: [a]\n")); err == nil {
		t.Error("a misspelled field was accepted")
	}
}

func TestImageTableLookup(t *testing.T) {
	entry := func(cmd string) ImageEntry { return ImageEntry{Command: []string{cmd}} }
	table, err := newImageTable("table.yaml", mergeImageEntries(builtinImages(), map[string]ImageEntry{
		"example.com/train:v1":      entry("exact"),
		"example.com/train":         entry("any-tag"),
		"example.com/*":             entry("short-prefix"),
		"example.com/team/*":        entry("long-prefix"),
		"localhost:5000/tool":       entry("with-port"),
		"docker.io/library/python":  entry("python"),
		"registry.example/img:beta": entry("beta"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		image, want string
	}{
		{"example.com/train:v1", "exact"},
		{"example.com/train:v2", "any-tag"},
		{"example.com/train", "any-tag"},
		{"example.com/train@sha256:abcd", "any-tag"},
		{"example.com/other:v1", "short-prefix"},
		{"example.com/team/x:v1", "long-prefix"},
		{"localhost:5000/tool:3", "with-port"},
		{"localhost:5000/tool", "with-port"},
		{"python:3.12", "python"},
		{"docker.io/python", "python"},
		{"busybox:1.36", "builtin"},
		{"docker.io/library/busybox", "builtin"},
		{"registry.example/img:beta", "beta"},
		{"registry.example/img:gamma", ""},
		{"unknown", ""},
	}
	for _, tc := range tests {
		e, ok := table.Lookup(tc.image)
		got := ""
		if ok {
			got = "builtin"
			if len(e.Command) > 0 {
				got = e.Command[0]
			}
		}
		if got != tc.want {
			t.Errorf("Lookup(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

func TestLoadImageTableMergesOverBuiltins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "images.yaml")
	if err := os.WriteFile(path, []byte("images:\n  busybox:\n    command: [/bin/custom]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	table, err := LoadImageTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := table.Lookup("busybox:1.36"); !reflect.DeepEqual(e.Command, []string{"/bin/custom"}) {
		t.Errorf("busybox = %+v, want the file's entry", e)
	}
	if _, err := LoadImageTable(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing table file was accepted")
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("images:\n  x:\n    overrideCommand: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadImageTable(bad); err == nil || !strings.Contains(err.Error(), "overrideCommand needs a command") {
		t.Errorf("overrideCommand without a command: %v", err)
	}
}

func TestUnknownImageMessage(t *testing.T) {
	withFile, _ := newImageTable("/etc/paddlejob/images.yaml", nil)
	msg := withFile.unknownImageMessage("example.com/x:v1")
	for _, want := range []string{`"example.com/x:v1"`, "/etc/paddlejob/images.yaml", "images:\n  example.com/x:\n    command:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	withoutFile, _ := newImageTable("", nil)
	if msg := withoutFile.unknownImageMessage("x"); !strings.Contains(msg, "--image-table") {
		t.Errorf("message without a table file %q does not mention --image-table", msg)
	}
}

func TestContainerArgv(t *testing.T) {
	image := ImageEntry{Command: []string{"/bin/train"}, Args: []string{"--epochs=1"}}
	override := ImageEntry{Command: []string{"/bin/local"}, Args: []string{"a"}, OverrideCommand: true}
	tests := []struct {
		name      string
		container corev1.Container
		entry     ImageEntry
		known     bool
		want      []string
		wantErr   bool
	}{
		{"image command and args", corev1.Container{}, image, true, []string{"/bin/train", "--epochs=1"}, false},
		{"container args replace the image's", corev1.Container{Args: []string{"--epochs=5"}}, image, true, []string{"/bin/train", "--epochs=5"}, false},
		{"container command wins", corev1.Container{Command: []string{"python"}, Args: []string{"x.py"}}, image, true, []string{"python", "x.py"}, false},
		{"unknown image with a command", corev1.Container{Command: []string{"sh", "-c", "true"}}, ImageEntry{}, false, []string{"sh", "-c", "true"}, false},
		{"override replaces the command", corev1.Container{Command: []string{"python", "-m", "paddle.distributed.launch"}, Args: []string{"x"}}, override, true, []string{"/bin/local", "a"}, false},
		{"busybox runs its args", corev1.Container{Args: []string{"echo", "hi"}}, builtinImages()["busybox"], true, []string{"echo", "hi"}, false},
		{"busybox alone runs sh", corev1.Container{}, builtinImages()["busybox"], true, []string{"sh"}, false},
		{"nothing to run", corev1.Container{}, ImageEntry{}, true, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := containerArgv(&tc.container, tc.entry, tc.known)
			if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
