package operator

import (
	"io/fs"
	"testing"
)

func TestParseCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"536870912\n", 536870912, true},    // v2, 512Mi
		{"max\n", 0, false},                 // v2, no limit
		{"9223372036854771712\n", 0, false}, // v1, no limit
		{"", 0, false},
		{"garbage", 0, false},
	} {
		got, ok := parseCgroupMemoryLimit(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCgroupMemoryLimit(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// The operator keeps under 90% of its container's limit, cgroup v2's file
// read before v1's, unless the environment sets GOMEMLIMIT.
func TestMemoryLimitFor(t *testing.T) {
	v2, v1 := cgroupMemoryLimitFiles[0], cgroupMemoryLimitFiles[1]
	for _, tc := range []struct {
		name  string
		env   map[string]string
		files map[string]string
		want  int64
	}{
		{"no limit", nil, map[string]string{v2: "max\n", v1: "2000\n"}, 0},
		{"cgroup v2", nil, map[string]string{v2: "1000\n", v1: "2000\n"}, 900},
		{"cgroup v1", nil, map[string]string{v1: "2000\n"}, 1800},
		{"no cgroup files", nil, nil, 0},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, map[string]string{v2: "1000"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			readFile := func(p string) ([]byte, error) {
				if s, ok := tc.files[p]; ok {
					return []byte(s), nil
				}
				return nil, fs.ErrNotExist
			}
			if got := memoryLimitFor(getenv, readFile); got != tc.want {
				t.Errorf("memoryLimitFor = %d; want %d", got, tc.want)
			}
		})
	}
}
