package paddleruntime

import (
	"errors"
	"strings"
	"testing"
)

func TestFsFreeFull(t *testing.T) {
	for _, tc := range []struct {
		name string
		free fsFree
		want bool
	}{
		// The tmpfs of testdata/pip/install-enospc.out: 288890880 bytes free
		// before pip ran, 0 after it failed.
		{"before the install", fsFree{bytes: 288890880, inodes: 3000000, files: 3000000}, false},
		{"after ENOSPC", fsFree{bytes: 0, inodes: 2990000, files: 3000000}, true},
		{"a few blocks left", fsFree{bytes: 4096 * 100, inodes: 1000, files: 3000000}, true},
		{"out of inodes", fsFree{bytes: 1 << 30, inodes: 3, files: 3000000}, true},
		{"no inode count", fsFree{bytes: 1 << 30, inodes: 0, files: 0}, false},
	} {
		if got := tc.free.full(); got != tc.want {
			t.Errorf("%s: full() = %v; want %v", tc.name, got, tc.want)
		}
	}
}

// statfs of a real directory.
func TestStatFree(t *testing.T) {
	f, err := statFree(t.TempDir())
	if err != nil || f.bytes == 0 {
		t.Fatalf("statFree = %+v, %v", f, err)
	}
	if _, err := statFree("/nonexistent/dir"); err == nil {
		t.Error("statFree of a missing directory succeeded")
	}
}

func TestNoSpaceError(t *testing.T) {
	defer func(f func(string) (fsFree, error)) { statFree = f }(statFree)
	in := &installer{pins: pins, root: "/cache/paddle-runtime", logPath: "/cache/paddle-runtime/x.log"}
	t.Setenv("TMPDIR", "/scratch")
	roomy := fsFree{bytes: 288890880, inodes: 1000, files: 2000}
	for _, tc := range []struct {
		name  string
		free  map[string]fsFree // by directory; roomy when absent
		out   string
		want  []string // nil: not a space error
		noErr bool
	}{
		{
			name: "the cache's disk is full", free: map[string]fsFree{"/cache/paddle-runtime": {}},
			out:  pipTestdata(t, "install-enospc.out"),
			want: []string{"no space left to install the Paddle runtime: the filesystem of the cache /cache/paddle-runtime has 0 KiB free (free some, or set $PADDLEJOB_CACHE", "[Errno 28] No space left on device"},
		},
		{
			name: "the temporary directory's disk is full", free: map[string]fsFree{"/scratch": {bytes: 1 << 20}},
			out:  pipTestdata(t, "install-enospc.out"),
			want: []string{"the filesystem of pip's temporary directory /scratch has 1 MiB free (free some, or set $TMPDIR"},
		},
		{
			// pip removed the download that filled the disk: statfs sees
			// room again, only pip's words tell.
			name: "a download filled the disk", out: pipTestdata(t, "install-enospc-download.out"),
			want: []string{"a filesystem pip writes to filled up while it wrote", "the cache /cache/paddle-runtime or pip's temporary directory /scratch", "OSError(28, 'No space left on device')"},
		},
		{name: "room, and another failure", out: pipTestdata(t, "install-bad-wheel.out"), noErr: true},
		{name: "statfs fails: no verdict", free: map[string]fsFree{"/cache/paddle-runtime": {bytes: 1}}, out: pipTestdata(t, "install-bad-wheel.out"), noErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statFree = func(dir string) (fsFree, error) {
				if tc.name == "statfs fails: no verdict" {
					return fsFree{}, errors.New("statfs: input/output error")
				}
				if f, ok := tc.free[dir]; ok {
					return f, nil
				}
				return roomy, nil
			}
			err := in.noSpaceError(tc.out)
			if tc.noErr {
				if err != nil {
					t.Fatalf("noSpaceError = %v; want none", err)
				}
				return
			}
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("noSpaceError = %v; want it to contain %q", err, want)
				}
			}
		})
	}
}
