package operator

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// The operator's memory grows with the jobs, pods, Services and ConfigMaps
// it caches, and Go's collector lets the heap reach twice what is live before
// it collects: near its container's memory limit the operator would be
// OOM-killed while half its heap is garbage. Unless GOMEMLIMIT says
// otherwise, the collector is told to stay under 90% of the container's
// limit (cgroup v2's memory.max, or v1's memory.limit_in_bytes), collecting
// more often instead.

// memoryLimitShare is the share of the container's limit the Go runtime
// keeps to; the rest is the binary, thread stacks and what the runtime does
// not account.
const memoryLimitShare = 0.9

// cgroupMemoryLimitFiles are where a container's memory limit is read, cgroup
// v2 first.
var cgroupMemoryLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// setMemoryLimit applies memoryLimitShare of the container's memory limit as
// the Go runtime's soft limit, unless GOMEMLIMIT is set or there is no limit.
func setMemoryLimit(log logr.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	for _, path := range cgroupMemoryLimitFiles {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if limit, ok := parseCgroupMemoryLimit(string(b)); ok {
			soft := int64(float64(limit) * memoryLimitShare)
			debug.SetMemoryLimit(soft)
			log.Info("Go memory limit set from the container's", "containerLimitBytes", limit, "goMemLimitBytes", soft)
		}
		return
	}
}

// parseCgroupMemoryLimit reads a cgroup memory limit file: false for none
// ("max", or cgroup v1's page-rounded maximum of about 2^63).
func parseCgroupMemoryLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}
