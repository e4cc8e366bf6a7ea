package node

import "golang.org/x/sys/unix"

// seccompArchitectures are the architectures the node filters, by GOARCH:
// on another, sandboxes run without a seccomp filter.
var seccompArchitectures = map[string]seccompArchitecture{
	"amd64": {audit: unix.AUDIT_ARCH_X86_64, x32Bit: 0x40000000, denied: amd64Denied, modes: amd64Modes},
	"arm64": {audit: unix.AUDIT_ARCH_AARCH64, denied: arm64Denied, modes: arm64Modes},
}
