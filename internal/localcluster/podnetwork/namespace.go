package podnetwork

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Namespace is a network namespace held by a file descriptor: no bind mount
// names it, so it ends when the last descriptor and the last process in it go.
//
// A network namespace belongs to a thread, not to a process, so everything
// done in one runs on a locked OS thread that setns'd into it. A socket keeps
// the namespace it was created in: a listener or connection made by Listen,
// ListenPacket or DialContext is used afterwards from any goroutine.
type Namespace struct {
	mu     sync.RWMutex
	file   *os.File // nil once closed
	closed bool
}

// ErrClosed is returned by a closed Namespace's methods.
var ErrClosed = errors.New("podnetwork: namespace closed")

// New creates a network namespace. It unshares on a locked OS thread that it
// never returns to the Go runtime: that thread ends with the goroutine, so no
// other goroutine ever runs in the new namespace by accident.
func New() (*Namespace, error) {
	type result struct {
		file *os.File
		err  error
	}
	res := make(chan result, 1)
	go func() {
		// Never unlocked: the thread is in the new namespace and dies with
		// this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			res <- result{err: fmt.Errorf("creating a network namespace: unshare(CLONE_NEWNET): %w", err)}
			return
		}
		f, err := openThreadNetns()
		res <- result{file: f, err: err}
	}()
	r := <-res
	if r.err != nil {
		return nil, r.err
	}
	return &Namespace{file: r.file}, nil
}

// Current returns the network namespace of the calling thread (for the
// process's own namespace, call it from any goroutine that has not entered
// another one: the Go runtime's threads all share the process's).
func Current() (*Namespace, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := openThreadNetns()
	if err != nil {
		return nil, err
	}
	return &Namespace{file: f}, nil
}

func openThreadNetns() (*os.File, error) {
	f, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("opening the thread's network namespace: %w", err)
	}
	return f, nil
}

// Do runs fn on an OS thread that is in the namespace, then brings the
// thread back to the namespace it was in. fn runs on a goroutine of its own
// (the caller waits for it), so it must not start goroutines that expect to
// stay in the namespace: they run on other threads.
//
// A thread that cannot be brought back is never reused: it ends with that
// goroutine. That is the rule, not an accident, in a user namespace (a normal
// user's node): entering the namespaces it created is allowed, going back to
// the host's, which the initial user namespace owns, is not; every Do then
// costs a thread, as New does.
func (ns *Namespace) Do(fn func() error) error {
	ns.mu.RLock()
	defer ns.mu.RUnlock()
	if ns.closed {
		return ErrClosed
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restore, err := ns.enter()
		if err != nil {
			// The thread may be in either namespace: let it die.
			errc <- err
			return
		}
		fnErr := fn()
		if err := restore(); err == nil {
			runtime.UnlockOSThread()
		} // else the thread is left locked, so it dies with us
		errc <- fnErr
	}()
	return <-errc
}

// EnterLocked moves the calling thread into the namespace and returns the
// function that moves it back. The caller must have locked its goroutine to
// its thread (runtime.LockOSThread) and must keep it locked, for good, if
// restoring fails, as it does in a user namespace when the thread came from
// the host's namespace (see Do). It is for a thread that forks from inside
// the namespace, such as the node's process spawner.
func (ns *Namespace) EnterLocked() (restore func() error, err error) {
	ns.mu.RLock()
	defer ns.mu.RUnlock()
	if ns.closed {
		return nil, ErrClosed
	}
	return ns.enter()
}

// enter setns'es the calling (locked) thread into ns. The caller holds mu.
func (ns *Namespace) enter() (restore func() error, err error) {
	prev, err := openThreadNetns()
	if err != nil {
		return nil, err
	}
	if err := unix.Setns(int(ns.file.Fd()), unix.CLONE_NEWNET); err != nil {
		prev.Close()
		return nil, fmt.Errorf("entering a network namespace: setns: %w", err)
	}
	return func() error {
		defer prev.Close()
		if err := unix.Setns(int(prev.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("leaving a network namespace: setns: %w", err)
		}
		return nil
	}, nil
}

// Listen is net.Listen with the socket created in the namespace.
func (ns *Namespace) Listen(network, address string) (net.Listener, error) {
	var l net.Listener
	err := ns.Do(func() error {
		var err error
		l, err = net.Listen(network, address)
		return err
	})
	return l, err
}

// ListenPacket is net.ListenPacket with the socket created in the namespace.
func (ns *Namespace) ListenPacket(network, address string) (net.PacketConn, error) {
	var c net.PacketConn
	err := ns.Do(func() error {
		var err error
		c, err = net.ListenPacket(network, address)
		return err
	})
	return c, err
}

// DialContext is net.Dialer.DialContext with the socket created in the
// namespace; it has the signature of http.Transport.DialContext.
func (ns *Namespace) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := ns.Do(func() error {
		var err error
		var d net.Dialer
		c, err = d.DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// Fd is the namespace's descriptor, valid until Close.
func (ns *Namespace) Fd() uintptr {
	ns.mu.RLock()
	defer ns.mu.RUnlock()
	if ns.closed {
		return ^uintptr(0)
	}
	return ns.file.Fd()
}

// Close releases the descriptor. The namespace itself lasts while a process
// or a socket is still in it. Close waits for running Do calls to end.
func (ns *Namespace) Close() error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.closed {
		return nil
	}
	ns.closed = true
	return ns.file.Close()
}
