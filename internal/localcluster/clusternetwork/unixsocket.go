package clusternetwork

import (
	"fmt"
	"io/fs"
	"net"
	"os"
)

// maxSocketPath is the longest path a Unix socket may have (sun_path holds
// 108 bytes, the last a NUL).
const maxSocketPath = 107

// listenUnix listens on the Unix socket path, replacing a stale socket left
// by an earlier run (and nothing else), readable and writable by this user
// only: whoever connects reaches the cluster network. what names the socket
// in errors.
func listenUnix(path, what string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("the %s socket %s is %d bytes long, more than a Unix socket's %d: give it a shorter path", what, path, len(path), maxSocketPath)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("the %s socket %s exists and is not a socket: not replacing it", what, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on the %s socket: %w", what, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
