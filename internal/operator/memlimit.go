package operator

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// The operator's heap is almost all its caches of jobs, pods, Services and
// ConfigMaps, live for as long as it runs, and Go's collector by default
// lets the heap grow to twice what is live before it collects. Unless the
// environment says otherwise, the operator collects at half that headroom
// (GOGC=50; the memory and CPU it costs are in docs/benchmarks.md), and
// near its container's memory limit it collects more often instead of being
// OOM-killed while part of its heap is garbage: the collector is told to
// stay under 90% of the limit (cgroup v2's memory.max, or v1's
// memory.limit_in_bytes) unless GOMEMLIMIT is set.

// defaultGCPercent is the operator's GOGC unless the environment sets one.
const defaultGCPercent = 50

// memoryLimitShare is the share of the container's limit the Go runtime
// keeps to; the rest is the binary, thread stacks and what the runtime does
// not account.
const memoryLimitShare = 0.9

// cgroupMemoryLimitFiles are where a container's memory limit is read, cgroup
// v2 first.
var cgroupMemoryLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memorySettings are the collector's settings the operator applies: a
// GOGC, and a soft memory limit in bytes; 0 leaves either as the runtime
// has it.
type memorySettings struct {
	gcPercent int
	limit     int64
}

// memorySettingsFor decides the settings from the environment and the
// container's memory limit, read with readFile.
func memorySettingsFor(getenv func(string) string, readFile func(string) ([]byte, error)) memorySettings {
	var s memorySettings
	if getenv("GOGC") == "" {
		s.gcPercent = defaultGCPercent
	}
	if getenv("GOMEMLIMIT") != "" {
		return s
	}
	for _, path := range cgroupMemoryLimitFiles {
		b, err := readFile(path)
		if err != nil {
			continue
		}
		if limit, ok := parseCgroupMemoryLimit(string(b)); ok {
			s.limit = int64(float64(limit) * memoryLimitShare)
		}
		break
	}
	return s
}

// applyMemorySettings applies memorySettingsFor the process's environment
// and cgroup.
func applyMemorySettings(log logr.Logger) {
	s := memorySettingsFor(os.Getenv, os.ReadFile)
	if s.gcPercent > 0 {
		debug.SetGCPercent(s.gcPercent)
	}
	if s.limit > 0 {
		debug.SetMemoryLimit(s.limit)
		log.Info("Go memory limit set from the container's", "goMemLimitBytes", s.limit, "share", memoryLimitShare)
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
