package endpoint

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSplitListAndIndex(t *testing.T) {
	list := SplitList(" a:1, b:2,,c:3 ,")
	if want := []string{"a:1", "b:2", "c:3"}; !reflect.DeepEqual(list, want) {
		t.Fatalf("SplitList = %q, want %q", list, want)
	}
	if SplitList("") != nil {
		t.Error("SplitList of nothing is not empty")
	}
	for ep, want := range map[string]int{"a:1": 0, "c:3": 2, "d:4": -1, "b": -1} {
		if got := Index(list, ep); got != want {
			t.Errorf("Index(%q) = %d, want %d", ep, got, want)
		}
	}
}

func TestListen(t *testing.T) {
	tests := []struct {
		endpoint string
		wantIP   string // "" when listening must fail
		wantErr  string
	}{
		{"127.0.0.1:0", "127.0.0.1", ""},
		{"127.0.0.7:0", "127.0.0.7", ""},
		{"localhost:0", "127.0.0.1", ""},
		{":0", "", "no host"},
		{"0.0.0.0:0", "", "wildcard"},
		{"[::]:0", "", "wildcard"},
		{"127.0.0.1", "", "missing port"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			ln, err := Listen(context.Background(), tt.endpoint, time.Second, t.Logf)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if got := ln.Addr().(*net.TCPAddr).IP.String(); got != tt.wantIP {
				t.Fatalf("listening on %s, want %s", got, tt.wantIP)
			}
		})
	}
}

func TestDialWaitsForALateListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var mu sync.Mutex
	var logged []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}
	late := make(chan net.Listener, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
		}
		late <- ln
	}()
	conn, err := Dial(context.Background(), "pserver 1", addr, 10*time.Second, logf)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	(<-late).Close()
	mu.Lock()
	defer mu.Unlock()
	if len(logged) < 2 || !strings.Contains(logged[0], "waiting for pserver 1 at "+addr) || !strings.Contains(logged[len(logged)-1], "reached pserver 1") {
		t.Fatalf("log = %q, want a wait for pserver 1 and its arrival", logged)
	}
}

func TestDialGivesUpNamingThePeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = Dial(context.Background(), "rank 2", addr, 300*time.Millisecond, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "rank 2 at "+addr+" unreachable after 300ms") {
		t.Fatalf("error = %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("gave up after %s, want about 300ms", took)
	}
}
