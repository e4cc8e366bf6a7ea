package node

import "golang.org/x/sys/unix"

// amd64Denied are x86-64's own calls Docker's profile refuses: port I/O,
// old module and sysctl interfaces.
var amd64Denied = []uintptr{
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB, unix.SYS_CREATE_MODULE, unix.SYS_GET_KERNEL_SYMS,
	unix.SYS_QUERY_MODULE, unix.SYS_NFSSERVCTL, unix.SYS_SYSFS, unix.SYS__SYSCTL, unix.SYS_USTAT,
}

var arm64Denied []uintptr

// amd64Modes are x86-64's own calls that set a file's mode.
var amd64Modes = []modeArgument{
	{unix.SYS_CHMOD, 1, -1}, {unix.SYS_CREAT, 1, -1}, {unix.SYS_MKNOD, 1, -1}, {unix.SYS_OPEN, 2, 1},
}

var arm64Modes []modeArgument
