package testutil

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// Exchange connects to addr, sends msg, half-closes and reads the reply to
// EOF: one round trip through a TCP proxy under test.
func Exchange(addr, msg string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(c)
	return string(reply), err
}

// Listening reports whether something listens at addr: a connection is not
// refused. (A proxy may reset a connection it has no backend for before the
// dial returns: that still counts as listening.)
func Listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return true
	}
	return !errors.Is(err, syscall.ECONNREFUSED)
}
