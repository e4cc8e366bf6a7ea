package dashboard

import (
	"context"
	"strings"
	"testing"
)

// The dashboard listens on loopback only, unless told otherwise.
func TestListenRefusesAddressesThatAreNotLoopback(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		address     string
		port        int
		allowRemote bool
		wantErr     string // "" when accepted
	}{
		{address: "127.0.0.1"},
		{address: "localhost"},
		{address: "0.0.0.0", wantErr: `--address "0.0.0.0" is not a loopback address`},
		{address: "", wantErr: "empty means every interface"},
		{address: "192.0.2.10", wantErr: "--allow-remote"},
		{address: "::", wantErr: "is not a loopback address"},
		{address: "127.0.0.1", port: 70000, wantErr: "--port 70000: want 0 (any free port) to 65535"},
		// Told: the check is skipped (a loopback address keeps the test on loopback).
		{address: "127.0.0.1", allowRemote: true},
	} {
		ln, err := Listen(ctx, c.address, c.port, c.allowRemote)
		if ln != nil {
			ln.Close()
		}
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("Listen(%q, %d, %v): %v", c.address, c.port, c.allowRemote, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("Listen(%q, %d, %v): error %v, want one saying %q", c.address, c.port, c.allowRemote, err, c.wantErr)
		}
	}
	// An IPv6 loopback address passes the check (listening on it needs IPv6).
	if err := checkLoopback(ctx, "::1"); err != nil {
		t.Errorf("::1: %v", err)
	}
}
