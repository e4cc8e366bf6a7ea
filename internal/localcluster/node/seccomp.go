package node

// The seccomp filter of every sandbox: the system calls of Docker's default
// profile that matter here are refused with EPERM, so that a pod cannot
// mount, load kernel modules or BPF programs, trace the kernel, reach the
// kernel's keyrings, make namespaces (a user namespace would give it
// capabilities there), reboot, swap, open files by handle past its mounts,
// set the clock, use io_uring (whose operations no filter sees), or give a
// file a set-user-ID or set-group-ID mode (below). The rest is allowed, as
// in Docker's profile; ptrace and process_vm_* stay allowed as there too,
// since the sandbox's PID namespace holds only the container's own
// processes.
//
// bwrap loads the filter (--seccomp FD) as a compiled classic BPF program
// for the machine's architecture. It is assembled here with
// golang.org/x/net/bpf (already in the module graph through client-go, kept
// by the Go team), so no C library (libseccomp) is needed.

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Seccomp return values and the layout of struct seccomp_data.
const (
	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000
	offsetNr        = 0
	offsetArch      = 4
	offsetArg0Low   = 16 // little-endian: the low half of args[0]
)

// offsetArgLow is where the low half of args[i] is (little-endian).
func offsetArgLow(i int) uint32 { return offsetArg0Low + 8*uint32(i) }

// deniedSyscalls are refused with EPERM, whatever their arguments: those of
// every architecture (seccompArch adds its own).
var deniedSyscalls = []uintptr{
	// Mounts, old and new API; pivot_root.
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_MOUNT_SETATTR,
	// Joining another namespace.
	unix.SYS_SETNS,
	// The kernel: modules, kexec, BPF, perf, keyrings, reboot, swap.
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_KEXEC_LOAD,
	unix.SYS_KEXEC_FILE_LOAD, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_KEYCTL, unix.SYS_ADD_KEY,
	unix.SYS_REQUEST_KEY, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_SYSLOG, unix.SYS_QUOTACTL, unix.SYS_LOOKUP_DCOOKIE, unix.SYS_VHANGUP,
	// Files by handle (past the sandbox's mounts), userfaultfd.
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_USERFAULTFD,
	// The clock.
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME,
	// io_uring runs opens, chmods and the rest where no filter sees them.
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
}

// A pod that runs as root writes a writable host path as the disk's root
// (the idmap maps its 0 to the disk's 0, as Kubernetes' idmapped volumes
// do), and owns what root owns there. A set-user-ID (or set-group-ID) mode
// on such a file would leave the host a program that runs as the host's
// root for whoever starts it: every call that gives a file a mode is refused
// (EPERM) when the mode holds either bit, the calls that may create a file
// when their flags ask to create one. Nothing else in the pod needs them: no
// capability is kept that would let a set-user-ID program gain anything.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// createFlags are the open flags that make a file: O_CREAT, and O_TMPFILE's
// own bit (O_TMPFILE includes O_DIRECTORY, which alone makes nothing).
const createFlags = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY

// modeArgument is a system call that sets a file's mode: the index of its
// mode argument and, for the opens, of its flags (-1: it always sets one).
type modeArgument struct {
	nr          uintptr
	mode, flags int
}

// modeArguments are those of every architecture (seccompArch adds its own).
var modeArguments = []modeArgument{
	{unix.SYS_FCHMOD, 1, -1}, {unix.SYS_FCHMODAT, 2, -1}, {unix.SYS_FCHMODAT2, 2, -1},
	{unix.SYS_MKNODAT, 2, -1}, {unix.SYS_OPENAT, 3, 2},
}

// namespaceFlags are the clone and unshare flags that make namespaces;
// CLONE_NEWTIME (0x80) only unshare takes: in clone's flags it is part of
// the exit signal.
const (
	cloneNamespaceFlags   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNamespaceFlags = cloneNamespaceFlags | unix.CLONE_NEWTIME
)

// seccompProgram assembles the filter for arch, or says why it cannot.
func seccompProgram(arch seccompArchitecture) ([]bpf.RawInstruction, error) {
	eperm := bpf.RetConstant{Val: seccompRetErrno | uint32(unix.EPERM)}
	allow := bpf.RetConstant{Val: seccompRetAllow}
	prog := []bpf.Instruction{
		// Another architecture's calls (i386's int 0x80 on x86-64) have
		// other numbers: refused.
		bpf.LoadAbsolute{Off: offsetArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.audit, SkipTrue: 1},
		eperm,
		bpf.LoadAbsolute{Off: offsetNr, Size: 4},
	}
	if arch.x32Bit != 0 {
		// x32 calls: the same numbers with a high bit set.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: arch.x32Bit, SkipFalse: 1}, eperm)
	}
	for _, nr := range append(append([]uintptr(nil), deniedSyscalls...), arch.denied...) {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1}, eperm)
	}
	// clone3 and openat2 pass their flags in memory the filter cannot read:
	// ENOSYS makes the C library fall back to clone and openat, whose flags
	// it can (as Docker does for clone3).
	for _, nr := range []uintptr{unix.SYS_CLONE3, unix.SYS_OPENAT2} {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1},
			bpf.RetConstant{Val: seccompRetErrno | uint32(unix.ENOSYS)})
	}
	for _, m := range append(append([]modeArgument(nil), modeArguments...), arch.modes...) {
		checkMode := []bpf.Instruction{
			bpf.LoadAbsolute{Off: offsetArgLow(m.mode), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: setIDBits, SkipFalse: 1},
			eperm,
			allow,
		}
		if m.flags >= 0 {
			checkMode = append([]bpf.Instruction{
				bpf.LoadAbsolute{Off: offsetArgLow(m.flags), Size: 4},
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: createFlags, SkipFalse: uint8(len(checkMode) - 1)},
			}, checkMode...)
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(m.nr), SkipFalse: uint8(len(checkMode))})
		prog = append(prog, checkMode...)
	}
	for _, c := range []struct {
		nr    uintptr
		flags uint32
	}{{unix.SYS_CLONE, cloneNamespaceFlags}, {unix.SYS_UNSHARE, unshareNamespaceFlags}} {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(c.nr), SkipFalse: 4},
			bpf.LoadAbsolute{Off: offsetArg0Low, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.flags, SkipFalse: 1},
			eperm,
			allow)
	}
	prog = append(prog, allow)
	return bpf.Assemble(prog)
}

// seccompArchitecture is what the filter needs to know of the machine.
type seccompArchitecture struct {
	// audit is the AUDIT_ARCH_ value of seccomp_data.arch.
	audit uint32
	// x32Bit, when set, marks the x32 ABI's system call numbers.
	x32Bit uint32
	// denied are system calls refused that only this architecture has.
	denied []uintptr
	// modes are the calls setting a file's mode that only it has.
	modes []modeArgument
}

// encodeSeccomp is the program as bwrap reads it: struct sock_filter
// entries in the machine's byte order (little-endian on the architectures
// the node filters).
func encodeSeccomp(prog []bpf.RawInstruction) []byte {
	out := make([]byte, 0, 8*len(prog))
	for _, ins := range prog {
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out
}

var compiledSeccomp = sync.OnceValues(func() ([]byte, error) {
	arch, ok := seccompArchitectures[runtime.GOARCH]
	if !ok {
		return nil, nil
	}
	prog, err := seccompProgram(arch)
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	return encodeSeccomp(prog), nil
})

// seccompFile is a pipe holding the compiled filter, for bwrap's --seccomp
// to read; nil on an architecture the node has no filter for.
func seccompFile() (*os.File, error) {
	data, err := compiledSeccomp()
	if err != nil || data == nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	// A few hundred bytes: the pipe's buffer holds them all.
	if _, err := w.Write(data); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
