package node

var amd64Denied []uintptr

// arm64 has none of x86-64's legacy calls: nothing of its own to refuse.
var arm64Denied []uintptr
