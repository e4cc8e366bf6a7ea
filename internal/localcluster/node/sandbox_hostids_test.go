package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
)

// A pod's uid u and gid g are the node's base+u and base+g on the host,
// runAsUser 0 included; ids beyond the range are refused naming the field.
func TestHostIDCredential(t *testing.T) {
	r := hostIDRange{Base: 0x70010000}
	tests := []struct {
		name              string
		uid, gid          int64
		wantUID, wantGID  uint32
		wantErrMentioning string
	}{
		{"a runAsNonRoot pod's default user", NonRootSandboxUID, NonRootSandboxGID, 0x70010000 + 1000, 0x70010000 + 1000, ""},
		{"root in the pod is not the host's", 0, 0, 0x70010000, 0x70010000, ""},
		{"the last id", 65535, 65535, 0x70010000 + 65535, 0x70010000 + 65535, ""},
		{"a uid beyond the range", 65536, 0, 0, 0, "securityContext.runAsUser 65536 is outside 0-65535"},
		{"a gid beyond the range", 1000, 70000, 0, 0, "securityContext.runAsGroup 70000 is outside 0-65535"},
		{"a negative uid", -1, 0, 0, 0, "securityContext.runAsUser -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cred, err := r.credential(sandboxIdentity{UID: ptr.To(tc.uid), GID: ptr.To(tc.gid)}, "main")
			if tc.wantErrMentioning != "" {
				var ce *configError
				if err == nil || !strings.Contains(err.Error(), tc.wantErrMentioning) || !errors.As(err, &ce) {
					t.Fatalf("error %v, want a config error mentioning %q", err, tc.wantErrMentioning)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cred.Uid != tc.wantUID || cred.Gid != tc.wantGID || len(cred.Groups) != 0 || cred.NoSetGroups {
				t.Errorf("credential %+v, want uid %d gid %d and no supplementary group", cred, tc.wantUID, tc.wantGID)
			}
			if cred.Uid == 0 || cred.Gid == 0 {
				t.Error("a pod runs as the host's root")
			}
		})
	}
}

// Every range a node picks lies above the system's accounts and subordinate
// ranges and below 2^31, aligned; a recorded range outside them is refused.
func TestHostIDRanges(t *testing.T) {
	for _, dir := range []string{"/root/.paddlejob", "/tmp/a", "/home/me/.paddlejob", "/var/lib/x"} {
		r := hostIDRange{Base: pickHostIDBase(dir)}
		if r.Base < 0x70000000 || uint64(r.Base)+hostIDRangeSize > 0x7FFE0000 || r.Base%hostIDRangeSize != 0 {
			t.Errorf("%s picks %s", dir, r)
		}
		if back, err := parseHostIDRange(r.String()[:strings.Index(r.String(), "-")] + "\n"); err != nil || back != r {
			t.Errorf("%s: the recorded %d reads back as %v (%v)", dir, r.Base, back, err)
		}
	}
	for _, text := range []string{"0", "1000", "100000", "1879048193", "2147352576", "4294901760", "x"} {
		if _, err := parseHostIDRange(text); err == nil || !strings.Contains(err.Error(), hostIDsFile) {
			t.Errorf("%q accepted as a range's base (%v)", text, err)
		}
	}
}

// The range is recorded on the first start and kept by the next.
func TestLoadHostIDRangeKeepsTheRecordedOne(t *testing.T) {
	dir := t.TempDir()
	first, err := loadHostIDRange(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := loadHostIDRange(dir); err != nil || again != first {
		t.Errorf("the second start has %v (%v), the first %v", again, err, first)
	}
	// A range recorded by an earlier node of that directory is kept.
	recorded := hostIDRange{Base: 0x70000000 + 7*hostIDRangeSize}
	if err := os.WriteFile(filepath.Join(dir, hostIDsFile), []byte("1879506944\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := loadHostIDRange(dir); err != nil || again != recorded {
		t.Errorf("after a restart the range is %v (%v), want the recorded %v", again, err, recorded)
	}
	if err := os.WriteFile(filepath.Join(dir, hostIDsFile), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadHostIDRange(dir); err == nil {
		t.Error("a recorded range at the host's root was taken")
	}
}
