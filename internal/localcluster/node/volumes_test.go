package node

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPlanMounts(t *testing.T) {
	vols := map[string]podVolume{
		"data": {Name: "data", HostPath: "/state/pod/volumes/data"},
		"cfg":  {Name: "cfg", HostPath: "/state/pod/volumes/cfg", ReadOnly: true, Projection: true},
	}
	env := func(k string) (string, bool) { return map[string]string{"POD": "w-0"}[k], k == "POD" }
	tests := []struct {
		name    string
		mounts  []corev1.VolumeMount
		want    []volumeMountPlan
		wantErr string
	}{
		{
			name:   "plain, readOnly, and a read-only volume",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "data", MountPath: "/ro/", ReadOnly: true}, {Name: "cfg", MountPath: "etc/cfg"}},
			want: []volumeMountPlan{
				{Volume: vols["data"], Target: "/data"},
				{Volume: vols["data"], Target: "/ro", ReadOnly: true},
				{Volume: vols["cfg"], Target: "/etc/cfg", ReadOnly: true},
			},
		},
		{
			name:   "subPath and subPathExpr",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/a", SubPath: "x/y"}, {Name: "data", MountPath: "/b", SubPathExpr: "logs/$(POD)"}},
			want: []volumeMountPlan{
				{Volume: vols["data"], Target: "/a", SubPath: "x/y"},
				{Volume: vols["data"], Target: "/b", SubPath: "logs/w-0"},
			},
		},
		{name: "unknown volume", mounts: []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}, wantErr: `no volume "nope"`},
		{name: "absolute subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "/etc"}}, wantErr: "must be relative"},
		{name: "escaping subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "a/../../b"}}, wantErr: "'..'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planMounts(&corev1.Container{VolumeMounts: tc.mounts}, vols, env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || waitingReason(err) != reasonConfigError {
					t.Fatalf("error %v, want a config error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestMountSource(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{data, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(data, "escape")); err != nil {
		t.Fatal(err)
	}
	vol := podVolume{Name: "data", HostPath: data}
	proj := podVolume{Name: "cfg", HostPath: filepath.Join(root, "cfg"), Projection: true}
	if err := writeProjection(proj.HostPath, map[string]projectedFile{"key": {Data: []byte("v"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}

	open := func(p volumeMountPlan) (string, mount, error) {
		t.Helper()
		m, err := p.open(hostPathRules{})
		if m.File == nil {
			return "", m, err
		}
		defer m.File.Close()
		real, rerr := realPath(m.File)
		if rerr != nil {
			t.Fatal(rerr)
		}
		return real, m, err
	}
	if got, _, err := open(volumeMountPlan{Volume: vol}); err != nil || got != data {
		t.Errorf("no subPath: %q, %v", got, err)
	}
	got, _, err := open(volumeMountPlan{Volume: vol, SubPath: "new/dir"})
	if err != nil || got != filepath.Join(data, "new/dir") {
		t.Errorf("subPath: %q, %v", got, err)
	}
	if st, err := os.Stat(got); err != nil || !st.IsDir() {
		t.Errorf("the subPath of a writable volume was not created: %v", err)
	}
	for _, sub := range []string{"escape", "escape/made"} {
		if _, m, err := open(volumeMountPlan{Volume: vol, SubPath: sub}); err == nil || !strings.Contains(err.Error(), "outside the volume") || m.File != nil {
			t.Errorf("subPath %s through a symlink out of the volume: %v", sub, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "made")); err == nil {
		t.Error("a subPath through a link was created outside the volume")
	}
	// A subPath into a projection binds the current file itself.
	got, _, err = open(volumeMountPlan{Volume: proj, SubPath: "key"})
	if err != nil || !strings.Contains(got, "..payload-") {
		t.Errorf("projection subPath resolved to %q, %v", got, err)
	}
	if _, _, err := open(volumeMountPlan{Volume: proj, SubPath: "missing"}); err == nil {
		t.Error("a missing key of a projection was created")
	}
}

func TestPrepareHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		kind    *corev1.HostPathType
		wantErr bool
		check   func() bool
	}{
		{"existing dir, no type", dir, nil, false, nil},
		{"missing, no type", filepath.Join(dir, "missing"), nil, true, nil},
		{"DirectoryOrCreate", filepath.Join(dir, "made/deep"), ptr.To(corev1.HostPathDirectoryOrCreate), false,
			func() bool { st, err := os.Stat(filepath.Join(dir, "made/deep")); return err == nil && st.IsDir() }},
		{"DirectoryOrCreate on a file", file, ptr.To(corev1.HostPathDirectoryOrCreate), true, nil},
		{"FileOrCreate", filepath.Join(dir, "sub/new-file"), ptr.To(corev1.HostPathFileOrCreate), false,
			func() bool {
				st, err := os.Stat(filepath.Join(dir, "sub/new-file"))
				return err == nil && st.Mode().IsRegular()
			}},
		{"Directory on a file", file, ptr.To(corev1.HostPathDirectory), true, nil},
		{"File", file, ptr.To(corev1.HostPathFile), false, nil},
		{"File on a dir", dir, ptr.To(corev1.HostPathFile), true, nil},
		{"Socket on a file", file, ptr.To(corev1.HostPathSocket), true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := prepareHostPath(hostPathRules{Writable: []string{dir}}, tc.path, tc.kind)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if tc.check != nil && !tc.check() {
				t.Error("not created")
			}
		})
	}
}

// A DirectoryOrCreate path in a writable directory that does not exist
// (an up --host-path-rw not made yet) is refused naming both and the flag.
func TestPrepareHostPathInAMissingWritableDirectory(t *testing.T) {
	writable := filepath.Join(t.TempDir(), "runs")
	p := filepath.Join(writable, "job-1")
	err := prepareHostPath(hostPathRules{Writable: []string{writable}}, p, ptr.To(corev1.HostPathDirectoryOrCreate))
	if err == nil || !strings.Contains(err.Error(), p+" cannot be created: "+writable+", the directory pods may write it in (paddlejob up --host-path-rw), does not exist") {
		t.Errorf("prepareHostPath: %v", err)
	}
	if _, err := os.Stat(writable); !os.IsNotExist(err) {
		t.Errorf("the node made the writable directory %s (%v)", writable, err)
	}
}

// What the node creates in a writable host path, the directories on the
// way included, pods of every uid may write: a root node's pods run as
// unprivileged host users (sandbox_hostids.go).
func TestPrepareHostPathModes(t *testing.T) {
	dir := t.TempDir()
	rules := hostPathRules{Writable: []string{dir}}
	tests := []struct {
		name string
		kind corev1.HostPathType
		want os.FileMode
	}{
		{"dir", corev1.HostPathDirectoryOrCreate, os.ModeDir | 0o777},
		{"file", corev1.HostPathFileOrCreate, 0o666},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+"-parent", tc.name)
			if err := prepareHostPath(rules, p, &tc.kind); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(p); err != nil || st.Mode()&(os.ModeDir|os.ModePerm) != tc.want {
				t.Errorf("made %v (%v), want %v", st.Mode(), err, tc.want)
			}
			if st, err := os.Stat(filepath.Dir(p)); err != nil || st.Mode().Perm() != 0o777 {
				t.Errorf("made the directory above it %v (%v), want 0777", st.Mode(), err)
			}
		})
	}
}
