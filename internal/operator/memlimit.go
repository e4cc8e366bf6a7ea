package operator

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// The operator's memory grows with the jobs, pods, Services and ConfigMaps
// it caches, and Go's collector lets the heap reach twice what is live
// before it collects: near its container's memory limit the operator would
// be OOM-killed while half its heap is garbage. Unless GOMEMLIMIT says
// otherwise, the collector is told to stay under 90% of the container's
// limit (cgroup v2's memory.max, or v1's memory.limit_in_bytes), collecting
// more often only there; a lower GOGC would collect more often everywhere,
// for little memory (docs/benchmarks.md, the operator's memory).

// memoryLimitShare is the share of the container's limit the Go runtime
// keeps to; the rest is the binary, thread stacks and what the runtime does
// not account.
const memoryLimitShare = 0.9

// cgroupMemoryLimitFiles are where a container's memory limit is read, cgroup
// v2 first.
var cgroupMemoryLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimitFor is the Go runtime's soft memory limit in bytes for the
// environment and the container's memory limit, read with readFile: 0 when
// GOMEMLIMIT is set or there is no limit.
func memoryLimitFor(getenv func(string) string, readFile func(string) ([]byte, error)) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	for _, path := range cgroupMemoryLimitFiles {
		b, err := readFile(path)
		if err != nil {
			continue
		}
		if limit, ok := parseCgroupMemoryLimit(string(b)); ok {
			return int64(float64(limit) * memoryLimitShare)
		}
		return 0
	}
	return 0
}

// setMemoryLimit applies memoryLimitFor the process's environment and
// cgroup.
func setMemoryLimit(log logr.Logger) {
	if limit := memoryLimitFor(os.Getenv, os.ReadFile); limit > 0 {
		debug.SetMemoryLimit(limit)
		log.Info("Go memory limit set from the container's", "goMemLimitBytes", limit, "share", memoryLimitShare)
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
