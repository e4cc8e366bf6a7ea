//go:build integration

package podnetwork

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
)

// upLo brings lo up in ns (a new namespace's lo is down).
func upLo(t *testing.T, ns *Namespace) {
	t.Helper()
	h, err := ns.netlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := upLoopback(h); err != nil {
		t.Fatal(err)
	}
}

// TestNamespaceSocketsStayInside: a listener made in a namespace is reached
// by a dial made in it, and not from the host on the same loopback address;
// the host's loopback listener is not reached from inside.
func TestNamespaceSocketsStayInside(t *testing.T) {
	ns, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	upLo(t, ns)

	hostL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostL.Close()
	port := hostL.Addr().(*net.TCPAddr).Port

	// The same address is free inside: a different stack.
	inL, err := ns.Listen("tcp", hostL.Addr().String())
	if err != nil {
		t.Fatalf("listening inside on the host listener's address: %v", err)
	}
	defer inL.Close()
	accepted := make(chan string, 1)
	go func() {
		c, err := inL.Accept()
		if err != nil {
			accepted <- "accept: " + err.Error()
			return
		}
		c.Close()
		accepted <- "inside"
	}()
	c, err := ns.DialContext(context.Background(), "tcp", inL.Addr().String())
	if err != nil {
		t.Fatalf("dialing inside: %v", err)
	}
	c.Close()
	if got := <-accepted; got != "inside" {
		t.Fatalf("inside listener: %s", got)
	}
	// Only the inside listener is there: close it and the inside dial is
	// refused although the host listens on that port.
	inL.Close()
	_, err = ns.DialContext(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial from inside to the host's loopback listener: got %v, want connection refused", err)
	}
}

// TestNamespaceDoRestoresThread: after Do the goroutine's threads are back in
// the process's namespace, and Do itself runs inside.
func TestNamespaceDoRestoresThread(t *testing.T) {
	host, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ns, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	hostIno := inode(t, host)
	nsIno := inode(t, ns)
	if hostIno == nsIno {
		t.Fatalf("New returned the host namespace (inode %d)", hostIno)
	}
	for range 20 {
		var seen uint64
		if err := ns.Do(func() error {
			cur, err := Current()
			if err != nil {
				return err
			}
			defer cur.Close()
			seen = inode(t, cur)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if seen != nsIno {
			t.Fatalf("Do ran in namespace %d, want %d", seen, nsIno)
		}
		cur, err := Current()
		if err != nil {
			t.Fatal(err)
		}
		if got := inode(t, cur); got != hostIno {
			t.Fatalf("after Do the thread is in %d, want the host's %d", got, hostIno)
		}
		cur.Close()
	}
	ns.Close()
	if err := ns.Do(func() error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do on a closed namespace: %v, want ErrClosed", err)
	}
}

func inode(t *testing.T, ns *Namespace) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(ns.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
