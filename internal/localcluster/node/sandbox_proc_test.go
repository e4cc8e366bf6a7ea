package node

import (
	"io/fs"
	"testing"
	"testing/fstest"
)

// The kernel's knobs a host has are read-only or masked in every sandbox,
// after bwrap's own /proc; those the host lacks get no mount point.
func TestBwrapArgsKernelKnobs(t *testing.T) {
	host := hostTree()
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o555}
	for _, p := range []string{"proc/sys", "proc/irq", "proc/bus", "proc/fs", "proc/acpi", "sys/firmware"} {
		host[p] = dir
	}
	for _, p := range []string{"proc/sysrq-trigger", "proc/keys", "proc/timer_list"} {
		host[p] = &fstest.MapFile{Mode: 0o444}
	}
	args := bwrapArgs(host, bwrapTestSpec())
	proc := indexOf(args, "--proc", "/proc")
	tests := []struct {
		name string
		want []string
	}{
		{"sysctls read-only", []string{"--ro-bind", "/proc/sys", "/proc/sys"}},
		{"sysrq-trigger read-only", []string{"--ro-bind", "/proc/sysrq-trigger", "/proc/sysrq-trigger"}},
		{"irq read-only", []string{"--ro-bind", "/proc/irq", "/proc/irq"}},
		{"bus read-only", []string{"--ro-bind", "/proc/bus", "/proc/bus"}},
		{"fs read-only", []string{"--ro-bind", "/proc/fs", "/proc/fs"}},
		{"keys masked", []string{"--ro-bind", "/dev/null", "/proc/keys"}},
		{"timer_list masked", []string{"--ro-bind", "/dev/null", "/proc/timer_list"}},
		{"acpi masked", []string{"--tmpfs", "/proc/acpi", "--remount-ro", "/proc/acpi"}},
		{"firmware masked", []string{"--tmpfs", "/sys/firmware", "--remount-ro", "/sys/firmware"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if i := indexOf(args, tc.want...); i < 0 || i < proc {
				t.Errorf("%q missing or before --proc: %q", tc.want, args)
			}
		})
	}
	t.Run("absent entries get no mount point", func(t *testing.T) {
		for _, p := range []string{"/proc/kcore", "/proc/scsi", "/sys/devices/virtual/powercap"} {
			for _, a := range args {
				if a == p {
					t.Errorf("%s is mounted although the host lacks it: %q", p, args)
				}
			}
		}
	})
}
