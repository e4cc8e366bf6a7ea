package node

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

func writeTestFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// imageHost is a host without /wide_and_deep or /opt, with /usr/local/bin
// and a merged /usr.
func imageHost() fstest.MapFS {
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	return fstest.MapFS{
		"usr/local/bin/pip": {Mode: 0o755},
		"usr/bin/sh":        {Mode: 0o755},
		"bin":               {Data: []byte("usr/bin"), Mode: fs.ModeSymlink | 0o777},
		"etc/passwd":        {Data: []byte("root")},
		"tmp":               dir,
		"root":              dir,
	}
}

func TestContainersGetPrivateCopiesOfTheImageFiles(t *testing.T) {
	src := imageSourceDir(t)
	extra := filepath.Join(t.TempDir(), "extra.txt")
	writeTestFile(t, extra, "extra", 0o644)
	entry := ImageEntry{Files: []ImageFile{
		{Source: src, Path: "/wide_and_deep"},
		{Source: extra, Path: "/wide_and_deep/conf/extra.txt"},
		{Source: extra, Path: "/train.txt"},
	}}
	pod := t.TempDir()
	rootA, rootB := filepath.Join(pod, "containers/a/rootfs"), filepath.Join(pod, "containers/b/rootfs")
	mountsA, err := prepareImageMounts(imageHost(), rootA, entry, "/wide_and_deep", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepareImageMounts(imageHost(), rootB, entry, "/wide_and_deep", nil); err != nil {
		t.Fatal(err)
	}
	wantMounts := []mount{
		{Source: filepath.Join(rootA, "train.txt"), Target: "/train.txt"},
		{Source: filepath.Join(rootA, "wide_and_deep"), Target: "/wide_and_deep"},
	}
	if mountsA = openedSources(t, mountsA); !reflect.DeepEqual(mountsA, wantMounts) {
		t.Errorf("mounts %+v, want %+v", mountsA, wantMounts)
	}

	a := filepath.Join(rootA, "wide_and_deep")
	b := filepath.Join(rootB, "wide_and_deep")
	checkImageCopy(t, src, a)

	// A container writes next to its code, as paddle.distributed.launch
	// does with ./log, and changes a file of the image.
	writeTestFile(t, filepath.Join(a, "log/workerlog.0"), "step 1", 0o644)
	writeTestFile(t, filepath.Join(a, "train.py"), "changed", 0o644)
	if _, err := os.Stat(filepath.Join(b, "log")); err == nil {
		t.Error("the other container sees the write")
	}
	if got := readTestFile(t, filepath.Join(b, "train.py")); got != "print('train')" {
		t.Errorf("the other container's train.py = %q", got)
	}
	if got := readTestFile(t, filepath.Join(src, "train.py")); got != "print('train')" {
		t.Errorf("the source's train.py = %q", got)
	}
	if _, err := os.Stat(filepath.Join(src, "log")); err == nil {
		t.Error("the write reached the source")
	}

	// A restarted container starts from the image again, even when it made
	// its files read-only.
	if err := os.Chmod(filepath.Join(a, "log"), 0o500); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareImageMounts(imageHost(), rootA, entry, "/wide_and_deep", nil); err != nil {
		t.Fatal(err)
	}
	if got := readTestFile(t, filepath.Join(a, "train.py")); got != "print('train')" {
		t.Errorf("after a restart train.py = %q", got)
	}
	if _, err := os.Stat(filepath.Join(a, "log")); err == nil {
		t.Error("after a restart the previous run's log is still there")
	}
	if err := removeTree(pod); err != nil {
		t.Errorf("removing the pod's directory: %v", err)
	}
}

// imageSourceDir is an image's files on the host: a script, an executable,
// a read-only file in a subdirectory and a symlink to it.
func imageSourceDir(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	writeTestFile(t, filepath.Join(src, "train.py"), "print('train')", 0o644)
	writeTestFile(t, filepath.Join(src, "run.sh"), "#!/bin/sh\n", 0o755)
	writeTestFile(t, filepath.Join(src, "conf/model.yaml"), "layers: 3", 0o444)
	if err := os.Symlink("conf/model.yaml", filepath.Join(src, "model.yaml")); err != nil {
		t.Fatal(err)
	}
	return src
}

// checkImageCopy checks a container's copy of imageSourceDir's files (with
// extra.txt merged into conf/): symlinks kept as links, modes kept but
// owner-writable, modification times kept, and no hard link to the source.
func checkImageCopy(t *testing.T, src, copyDir string) {
	t.Helper()
	if got := readTestFile(t, filepath.Join(copyDir, "conf/extra.txt")); got != "extra" {
		t.Errorf("the later file merged into the directory: %q", got)
	}
	if link, err := os.Readlink(filepath.Join(copyDir, "model.yaml")); err != nil || link != "conf/model.yaml" {
		t.Errorf("symlink copied as %q, %v", link, err)
	}
	if st, err := os.Stat(filepath.Join(copyDir, "run.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("run.sh: %v, %v; want mode 0755", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(copyDir, "conf/model.yaml")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("a read-only file is copied owner-writable: %v, %v", st.Mode(), err)
	}
	srcInfo, _ := os.Stat(filepath.Join(src, "train.py"))
	copyInfo, _ := os.Stat(filepath.Join(copyDir, "train.py"))
	if os.SameFile(srcInfo, copyInfo) || copyInfo.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Error("the copy is a hard link of the source")
	}
	if !copyInfo.ModTime().Equal(srcInfo.ModTime()) {
		t.Errorf("modification time %v, want the source's %v", copyInfo.ModTime(), srcInfo.ModTime())
	}
}

func TestImageCopyRefusesSpecialFiles(t *testing.T) {
	src := t.TempDir()
	writeTestFile(t, filepath.Join(src, "ok.txt"), "ok", 0o644)
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := prepareImageMounts(imageHost(), filepath.Join(t.TempDir(), "rootfs"), ImageEntry{Files: []ImageFile{{Source: src, Path: "/app"}}}, "", nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(src, "pipe")+" is a named pipe: a local image holds only regular files, directories and symlinks") {
		t.Errorf("a named pipe: %v", err)
	}

	sockDir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	l, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = prepareImageMounts(imageHost(), filepath.Join(t.TempDir(), "rootfs"), ImageEntry{Files: []ImageFile{{Source: sockDir, Path: "/app"}}}, "", nil)
	if err == nil || !strings.Contains(err.Error(), "is a socket") {
		t.Errorf("a socket: %v", err)
	}
}

func TestImageCopyDoesNotFollowItsSymlinks(t *testing.T) {
	outside := t.TempDir()
	first := t.TempDir()
	// The image's /app is a symlink out of the copy; a later file under
	// /app must not be written through it.
	if err := os.Symlink(outside, filepath.Join(first, "app")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "f")
	writeTestFile(t, file, "x", 0o644)
	_, err := prepareImageMounts(imageHost(), filepath.Join(t.TempDir(), "rootfs"), ImageEntry{Files: []ImageFile{
		{Source: first, Path: "/"}, {Source: file, Path: "/app/f"},
	}}, "", nil)
	if err == nil || !strings.Contains(err.Error(), "/app is not a directory in the image") {
		t.Errorf("a file under a symlink: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a write went through the symlink: %v", entries)
	}
}

func TestImageBindPoints(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"usr/local/bin/tool", "bin/helper", "wide_and_deep/train.py", "etc/app.conf", "opt/app/run", "tmp/scratch/x"} {
		writeTestFile(t, filepath.Join(root, f), "", 0o755)
	}
	mounts, err := imageBindPoints(imageHost(), root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range mounts {
		if m.ReadOnly {
			t.Errorf("%s is read-only", m.Target)
		}
		got[m.Target] = strings.TrimPrefix(m.Source, root)
	}
	want := map[string]string{
		"/usr/local/bin/tool": "/usr/local/bin/tool", // into a host directory, entry by entry
		"/usr/bin/helper":     "/bin/helper",         // /bin is usr/bin on this host
		"/wide_and_deep":      "/wide_and_deep",      // a new top-level directory, whole
		"/etc/app.conf":       "/etc/app.conf",
		"/opt":                "/opt", // the host has no /opt
		"/tmp/scratch":        "/tmp/scratch",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bind points %v, want %v", got, want)
	}
}

func TestBwrapArgsWithImageFilesAndHostPaths(t *testing.T) {
	src := t.TempDir()
	writeTestFile(t, filepath.Join(src, "train.py"), "", 0o644)
	tool := filepath.Join(t.TempDir(), "tool")
	writeTestFile(t, tool, "", 0o755)
	runtime := t.TempDir()
	entry := ImageEntry{
		Files: []ImageFile{
			{Source: src, Path: "/wide_and_deep"},
			{Source: tool, Path: "/usr/local/bin/tool"},
		},
		HostPaths: []string{runtime},
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	imageMounts, err := prepareImageMounts(imageHost(), root, entry, "/wide_and_deep", []string{"/wide_and_deep/data"})
	if err != nil {
		t.Fatal(err)
	}
	mounts := append(imageMounts, mount{Source: "/state/volumes/data", Target: "/wide_and_deep/data"})
	args := bwrapArgs(imageHost(), sandboxSpec{
		Hostname: "h", HostsFile: "/p/hosts", HostnameFile: "/p/hostname",
		Mounts: mounts, WorkingDir: "/wide_and_deep",
		Argv: []string{resolveCommand("tool", "/usr/local/bin:/usr/bin", mounts)},
	})
	for _, want := range [][]string{
		{"--bind", filepath.Join(root, "wide_and_deep"), "/wide_and_deep"},
		{"--bind", filepath.Join(root, "usr/local/bin/tool"), "/usr/local/bin/tool"},
		{"--ro-bind", runtime, runtime},
		// /usr is rebuilt so the tool's mount point can be made in it.
		{"--tmpfs", "/usr"}, {"--dir", "/usr/local"}, {"--ro-bind", "/usr/local/bin/pip", "/usr/local/bin/pip"}, {"--remount-ro", "/usr"},
		{"--chdir", "/wide_and_deep"},
	} {
		if !hasArgs(args, want...) {
			t.Errorf("missing %q in %q", want, args)
		}
	}
	if hasArgs(args, "--dir", "/wide_and_deep") {
		t.Error("the working directory is made on the tmpfs although the image has it")
	}
	if indexOf(args, "--bind", filepath.Join(root, "wide_and_deep"), "/wide_and_deep") > indexOf(args, "--bind", "/state/volumes/data", "/wide_and_deep/data") {
		t.Error("the volume is mounted before the image directory it lies in")
	}
	if got := args[len(args)-1]; got != "/usr/local/bin/tool" {
		t.Errorf("the command resolves to %q, want the image's /usr/local/bin/tool", got)
	}
}

// openedSources checks that every bind of mounts has its source open (the
// descriptor's file is the source) and returns them without the files,
// which it closes.
func openedSources(t *testing.T, mounts []mount) []mount {
	t.Helper()
	out := slices.Clone(mounts)
	for i := range out {
		m := &out[i]
		if m.Symlink != "" {
			if m.File != nil {
				t.Errorf("symlink %s has a file", m.Target)
			}
			continue
		}
		if m.File == nil {
			t.Errorf("bind of %s is not opened", m.Target)
			continue
		}
		if real, err := realPath(m.File); err != nil || real != m.Source {
			t.Errorf("bind of %s: the descriptor is %q (%v), want the source %s", m.Target, real, err, m.Source)
		}
		m.File.Close()
		m.File = nil
	}
	return out
}

func TestMissingWorkingDirIsMadeWritable(t *testing.T) {
	root := filepath.Join(t.TempDir(), "rootfs")
	host := imageHost()
	host["opt"] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	mounts, err := prepareImageMounts(host, root, ImageEntry{}, "/opt/work", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []mount{{Source: filepath.Join(root, "opt/work"), Target: "/opt/work"}}; !reflect.DeepEqual(openedSources(t, mounts), want) {
		t.Errorf("mounts %+v, want %+v", mounts, want)
	}
	for _, tc := range []struct {
		wd      string
		volumes []string
	}{{"/etc", nil}, {"/", nil}, {"", nil}, {"/data/x", []string{"/data"}}} {
		if mounts, err := prepareImageMounts(host, root, ImageEntry{}, tc.wd, tc.volumes); err != nil || len(mounts) != 0 {
			t.Errorf("working dir %q: mounts %+v, %v; want none", tc.wd, mounts, err)
		}
	}
	if _, err := prepareImageMounts(host, root, ImageEntry{HostPaths: []string{"/nonexistent/runtime"}}, "", nil); err == nil ||
		!strings.Contains(err.Error(), "host path /nonexistent/runtime") {
		t.Errorf("a missing host path: %v", err)
	}
}

func TestResolveCommandUsesTheContainersPath(t *testing.T) {
	venv := t.TempDir()
	writeTestFile(t, filepath.Join(venv, "bin/python3"), "", 0o755)
	imageCopy := t.TempDir()
	writeTestFile(t, filepath.Join(imageCopy, "bin/train"), "", 0o755)
	writeTestFile(t, filepath.Join(imageCopy, "bin/notes"), "", 0o644)
	mounts := []mount{{Source: imageCopy, Target: "/app"}}
	tests := []struct{ name, path, want string }{
		{"python3", venv + "/bin:/usr/bin:/bin", venv + "/bin/python3"},
		{"train", "/app/bin:/usr/bin", "/app/bin/train"},
		{"notes", "/app/bin", "notes"}, // not executable
		{"train", "/usr/bin", "train"}, // not on this PATH
		{"python3", "relative/bin:" + venv + "/bin", venv + "/bin/python3"},
	}
	for _, tc := range tests {
		if got := resolveCommand(tc.name, tc.path, mounts); got != tc.want {
			t.Errorf("resolveCommand(%q, %q) = %q, want %q", tc.name, tc.path, got, tc.want)
		}
	}
	nested := []mount{{Source: "/x", Target: "/app"}, {Source: imageCopy + "/bin", Target: "/app/tools"}}
	if got := hostPathOf("/app/tools/train", nested); got != imageCopy+"/bin/train" {
		t.Errorf("hostPathOf through the innermost mount = %q", got)
	}
}
