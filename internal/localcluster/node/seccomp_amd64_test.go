package node

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter (x86-64 numbers) run on system calls as the kernel hands them over: what Docker's
// profile refuses gets EPERM, namespaces made through clone or unshare too,
// clone3 and openat2 ENOSYS (the C library then uses clone and openat),
// everything else passes.
func TestSeccompFilter(t *testing.T) {
	arch := seccompArchitectures["amd64"]
	prog, err := seccompProgram(arch)
	if err != nil {
		t.Fatal(err)
	}
	run := func(audit, nr uint32, args ...uint32) uint32 { return runSeccomp(t, prog, audit, nr, args...) }
	const eperm, enosys = seccompRetErrno | 1, seccompRetErrno | 38
	x86 := uint32(unix.AUDIT_ARCH_X86_64)
	for _, tc := range []struct {
		name string
		nr   uint32
		args []uint32
		want uint32
	}{
		{"mount", 165, []uint32{0}, eperm},
		{"umount2", 166, []uint32{0}, eperm},
		{"kexec_load", 246, []uint32{0}, eperm},
		{"init_module", 175, []uint32{0}, eperm},
		{"finit_module", 313, []uint32{0}, eperm},
		{"delete_module", 176, []uint32{0}, eperm},
		{"bpf", 321, []uint32{0}, eperm},
		{"perf_event_open", 298, []uint32{0}, eperm},
		{"keyctl", 250, []uint32{0}, eperm},
		{"add_key", 248, []uint32{0}, eperm},
		{"request_key", 249, []uint32{0}, eperm},
		{"setns", 308, []uint32{0}, eperm},
		{"reboot", 169, []uint32{0}, eperm},
		{"swapon", 167, []uint32{0}, eperm},
		{"swapoff", 168, []uint32{0}, eperm},
		{"open_by_handle_at", 304, []uint32{0}, eperm},
		{"userfaultfd", 323, []uint32{0}, eperm},
		{"fsopen", 430, []uint32{0}, eperm},
		{"unshare CLONE_NEWUSER", 272, []uint32{unix.CLONE_NEWUSER}, eperm},
		{"unshare CLONE_NEWNS", 272, []uint32{unix.CLONE_NEWNS}, eperm},
		{"unshare CLONE_NEWTIME", 272, []uint32{unix.CLONE_NEWTIME}, eperm},
		{"unshare CLONE_FILES", 272, []uint32{unix.CLONE_FILES}, seccompRetAllow},
		{"clone a thread", 56, []uint32{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD}, seccompRetAllow},
		{"fork through clone", 56, []uint32{uint32(unix.SIGCHLD)}, seccompRetAllow},
		{"clone CLONE_NEWPID", 56, []uint32{unix.CLONE_NEWPID | uint32(unix.SIGCHLD)}, eperm},
		{"clone3", 435, []uint32{0}, enosys},
		{"read", 0, []uint32{0}, seccompRetAllow},
		{"ptrace", 101, []uint32{0}, seccompRetAllow},
		{"x32 read", 0x40000000, []uint32{0}, eperm},
		{"openat2", 437, []uint32{0}, enosys},
		{"io_uring_setup", 425, []uint32{0}, eperm},
	} {
		if got := run(x86, tc.nr, tc.args...); got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if got := run(unix.AUDIT_ARCH_I386, 3); got != eperm {
		t.Errorf("an i386 call: %#x, want EPERM", got)
	}
}

// A set-user-ID or set-group-ID mode is refused wherever a call sets a mode,
// the opens' only when they create; other modes pass.
func TestSeccompFilterModes(t *testing.T) {
	prog, err := seccompProgram(seccompArchitectures["amd64"])
	if err != nil {
		t.Fatal(err)
	}
	const eperm = seccompRetErrno | 1
	for _, tc := range []struct {
		name string
		nr   uint32
		args []uint32
		want uint32
	}{
		{"chmod 0755", 90, []uint32{0, 0o755}, seccompRetAllow},
		{"chmod 04755", 90, []uint32{0, 0o4755}, eperm},
		{"chmod 02755", 90, []uint32{0, 0o2755}, eperm},
		{"fchmod 04755", 91, []uint32{3, 0o4755}, eperm},
		{"fchmodat 06755", 268, []uint32{3, 0, 0o6755}, eperm},
		{"fchmodat2 0644", 452, []uint32{3, 0, 0o644}, seccompRetAllow},
		{"fchmodat2 04755", 452, []uint32{3, 0, 0o4755}, eperm},
		{"creat 04755", 85, []uint32{0, 0o4755}, eperm},
		{"mknod a set-user-ID file", 133, []uint32{0, unix.S_IFREG | 0o4755}, eperm},
		{"mknodat a fifo", 259, []uint32{3, 0, unix.S_IFIFO | 0o644}, seccompRetAllow},
		{"open O_CREAT 04755", 2, []uint32{0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, eperm},
		{"open O_CREAT 0644", 2, []uint32{0, unix.O_CREAT | unix.O_WRONLY, 0o644}, seccompRetAllow},
		{"open O_RDONLY, a stray mode", 2, []uint32{0, unix.O_RDONLY, 0o4755}, seccompRetAllow},
		{"openat O_CREAT 04755", 257, []uint32{3, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, eperm},
		{"openat O_TMPFILE 02755", 257, []uint32{3, 0, unix.O_TMPFILE | unix.O_RDWR, 0o2755}, eperm},
		{"openat O_RDONLY", 257, []uint32{3, 0, unix.O_RDONLY, 0}, seccompRetAllow},
	} {
		if got := runSeccomp(t, prog, unix.AUDIT_ARCH_X86_64, tc.nr, tc.args...); got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

// runSeccomp runs prog on a system call as the kernel hands it over. The
// VM reads words big-endian, the kernel in the machine's order: each field
// is laid out as the VM reads it.
func runSeccomp(t *testing.T, prog []bpf.RawInstruction, audit, nr uint32, args ...uint32) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(disassemble(t, prog))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offsetNr:], nr)
	binary.BigEndian.PutUint32(data[offsetArch:], audit)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[offsetArgLow(i):], a)
	}
	out, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

func disassemble(t *testing.T, raw []bpf.RawInstruction) []bpf.Instruction {
	t.Helper()
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter does not disassemble")
	}
	return prog
}
