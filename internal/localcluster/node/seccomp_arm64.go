package node

var amd64Denied []uintptr

// arm64 has none of x86-64's legacy calls: nothing of its own to refuse,
// and only the *at calls that set a mode, which every architecture has.
var (
	arm64Denied []uintptr
	arm64Modes  []modeArgument
)

var amd64Modes []modeArgument
