package testutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// ServeEcho serves ln until the test ends (its cleanup closes ln),
// answering each connection, once the client has half-closed it, with
// "<name>: <what the client sent>". ln may be anywhere: the host's loopback
// (ListenEcho) or a network namespace's.
func ServeEcho(t testing.TB, ln net.Listener, name string) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				data, _ := io.ReadAll(c)
				fmt.Fprintf(c, "%s: %s", name, data)
			}()
		}
	}()
}

// ListenEcho listens at addr on the host (port 0: a free one) and serves
// it with ServeEcho.
func ListenEcho(t testing.TB, addr, name string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ServeEcho(t, ln, name)
	return ln
}

// ExchangeWith connects to addr with dial (a net.Dialer's DialContext, or
// a network namespace's), sends msg, half-closes and reads the reply to
// EOF: one round trip through a proxy under test, to ServeEcho's servers
// say.
func ExchangeWith(dial func(ctx context.Context, network, addr string) (net.Conn, error), addr, msg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(c)
	return string(reply), err
}

// Exchange is ExchangeWith from the host.
func Exchange(addr, msg string) (string, error) {
	var d net.Dialer
	return ExchangeWith(d.DialContext, addr, msg)
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
