//go:build !amd64 && !arm64

package node

var amd64Denied, arm64Denied []uintptr

var amd64Modes, arm64Modes []modeArgument
