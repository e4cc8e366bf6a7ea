package node

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter (x86-64 numbers) run on system calls as the kernel hands them over: what Docker's
// profile refuses gets EPERM, namespaces made through clone or unshare too,
// clone3 ENOSYS (the C library then uses clone), everything else passes.
func TestSeccompFilter(t *testing.T) {
	arch := seccompArchitectures["amd64"]
	prog, err := seccompProgram(arch)
	if err != nil {
		t.Fatal(err)
	}
	// The VM reads words big-endian, the kernel in the machine's order: each
	// field is laid out as the VM reads it.
	run := func(audit, nr uint32, arg0 uint32) uint32 {
		t.Helper()
		vm, err := bpf.NewVM(disassemble(t, prog))
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[offsetNr:], nr)
		binary.BigEndian.PutUint32(data[offsetArch:], audit)
		binary.BigEndian.PutUint32(data[offsetArg0Low:], arg0)
		out, err := vm.Run(data)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(out)
	}
	const eperm, enosys = seccompRetErrno | 1, seccompRetErrno | 38
	x86 := uint32(unix.AUDIT_ARCH_X86_64)
	for _, tc := range []struct {
		name string
		nr   uint32
		arg0 uint32
		want uint32
	}{
		{"mount", 165, 0, eperm},
		{"umount2", 166, 0, eperm},
		{"kexec_load", 246, 0, eperm},
		{"init_module", 175, 0, eperm},
		{"finit_module", 313, 0, eperm},
		{"delete_module", 176, 0, eperm},
		{"bpf", 321, 0, eperm},
		{"perf_event_open", 298, 0, eperm},
		{"keyctl", 250, 0, eperm},
		{"add_key", 248, 0, eperm},
		{"request_key", 249, 0, eperm},
		{"setns", 308, 0, eperm},
		{"reboot", 169, 0, eperm},
		{"swapon", 167, 0, eperm},
		{"swapoff", 168, 0, eperm},
		{"open_by_handle_at", 304, 0, eperm},
		{"userfaultfd", 323, 0, eperm},
		{"fsopen", 430, 0, eperm},
		{"unshare CLONE_NEWUSER", 272, unix.CLONE_NEWUSER, eperm},
		{"unshare CLONE_NEWNS", 272, unix.CLONE_NEWNS, eperm},
		{"unshare CLONE_NEWTIME", 272, unix.CLONE_NEWTIME, eperm},
		{"unshare CLONE_FILES", 272, unix.CLONE_FILES, seccompRetAllow},
		{"clone a thread", 56, unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD, seccompRetAllow},
		{"fork through clone", 56, uint32(unix.SIGCHLD), seccompRetAllow},
		{"clone CLONE_NEWPID", 56, unix.CLONE_NEWPID | uint32(unix.SIGCHLD), eperm},
		{"clone3", 435, 0, enosys},
		{"read", 0, 0, seccompRetAllow},
		{"ptrace", 101, 0, seccompRetAllow},
		{"x32 read", 0x40000000, 0, eperm},
	} {
		if got := run(x86, tc.nr, tc.arg0); got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if got := run(unix.AUDIT_ARCH_I386, 3, 0); got != eperm {
		t.Errorf("an i386 call: %#x, want EPERM", got)
	}
}

func disassemble(t *testing.T, raw []bpf.RawInstruction) []bpf.Instruction {
	t.Helper()
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter does not disassemble")
	}
	return prog
}
