package launcher

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineWriter passes each write to a channel, so a test waits for a line.
type lineWriter struct {
	mu    sync.Mutex
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines <- string(p)
	return len(p), nil
}

// The trainer waits for every pserver, the ones that listen at once and the
// ones that listen later.
func TestServersListeningWaitsForEveryServer(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	// A port nothing listens on yet: taken and released.
	later, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	laterAddr := later.Addr().String()
	later.Close()

	servers := []netip.AddrPort{netip.MustParseAddrPort(up.Addr().String()), netip.MustParseAddrPort(laterAddr)}
	log := &lineWriter{lines: make(chan string, 10)}
	ready := serversListening(context.Background(), 0, servers, 10*time.Millisecond, log)

	if line := <-log.lines; !strings.Contains(line, "waiting for pserver "+laterAddr+" to accept connections (2 of 2)") {
		t.Fatalf("first log line %q, want the wait for the second pserver", line)
	}
	select {
	case <-ready:
		t.Fatal("ready while the second pserver does not listen")
	default:
	}
	l, err := net.Listen("tcp", laterAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	<-ready
	if line := <-log.lines; !strings.Contains(line, "all 2 pservers accept connections") {
		t.Errorf("last log line %q", line)
	}
}
