package node

import (
	"io/fs"
	"path"
)

// The kernel's knobs under /proc and /sys, as a pod sees them. bwrap's own
// /proc is read-write but for /proc/irq and /proc/bus (it covers /proc/sys
// and /proc/sysrq-trigger only where its caller cannot write them), so a
// sandbox whose user can write the host's sysctls could set
// kernel.core_pattern, and a "|program" there runs as the host's root. runc
// makes the same entries read-only or masks them in every container; so
// does the node, whoever the pod runs as.

// procReadOnly are bound read-only over themselves: readable, as programs
// read sysctls, and written by nobody. Reading /proc/sys through the host's
// mount shows the sandbox's own namespaces' values (network, UTS and IPC
// sysctls are looked up in the reader's namespaces).
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}

// procMaskedFiles are covered with /dev/null, as runc masks them: the
// kernel's memory, keys and timer internals.
var procMaskedFiles = []string{
	"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/timer_stats", "/proc/latency_stats",
	"/proc/sched_debug",
}

// procMaskedDirs are covered with an empty read-only tmpfs: hardware
// interfaces (ACPI, sound, SCSI) and the firmware's and power counters'
// entries under /sys.
var procMaskedDirs = []string{
	"/proc/acpi", "/proc/asound", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
}

// kernelKnobs adds the read-only binds and masks of the entries the host
// has (a mount point bwrap would have to create in /proc fails the
// sandbox). It follows --proc and --dev: the binds' sources are the host's
// /proc and /dev/null.
func (a *argList) kernelKnobs() {
	exists := func(p string) bool {
		_, err := fs.Lstat(a.host, rel(p))
		return err == nil
	}
	for _, p := range procReadOnly {
		if exists(p) {
			a.add("--ro-bind", p, p)
		}
	}
	for _, p := range procMaskedFiles {
		if exists(p) {
			a.add("--ro-bind", "/dev/null", p)
		}
	}
	for _, p := range procMaskedDirs {
		if exists(p) && (path.Dir(p) == "/proc" || underAny(p, a.boundRoots) || underAny(p, a.expandedRoots)) {
			a.add("--tmpfs", p, "--remount-ro", p)
		}
	}
}
