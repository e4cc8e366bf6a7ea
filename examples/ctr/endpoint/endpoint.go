// Package endpoint connects the examples' processes by the host:port
// addresses of the environment contract. A process listens on exactly its own
// address, never on every interface: on a local cluster all pods share the
// host's network, each with its own loopback IP. Peers start in any order, so
// connecting retries until a deadline and says whom it is waiting for.
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Logf prints a progress message.
type Logf func(format string, args ...any)

// SplitList parses a comma-separated endpoint list, dropping empty entries
// and surrounding spaces.
func SplitList(list string) []string {
	var out []string
	for _, ep := range strings.Split(list, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			out = append(out, ep)
		}
	}
	return out
}

// Index is the position of ep in list, or -1.
func Index(list []string, ep string) int {
	for i, e := range list {
		if e == ep {
			return i
		}
	}
	return -1
}

// Listen listens on the address of endpoint (host:port). A host name is
// resolved first, retrying until timeout because a pod's name may become
// resolvable only after the pod starts. Wildcard addresses are refused.
func Listen(ctx context.Context, endpoint string, timeout time.Duration, logf Logf) (net.Listener, error) {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	if host == "" {
		return nil, fmt.Errorf("endpoint %q has no host: refusing to listen on every interface", endpoint)
	}
	var ip net.IP
	err = retry(ctx, timeout, "address of "+host, logf, func() error {
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
		if err != nil {
			return err
		}
		ip = preferIPv4(ips)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ip.IsUnspecified() {
		return nil, fmt.Errorf("endpoint %q is a wildcard address: listen on this pod's own address instead", endpoint)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), port))
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", endpoint, err)
	}
	return ln, nil
}

func preferIPv4(ips []net.IP) net.IP {
	for _, ip := range ips {
		if ip.To4() != nil {
			return ip
		}
	}
	return ips[0]
}

// Dial connects to the peer at addr, described by name in messages (e.g.
// "pserver 1"), retrying with backoff until timeout.
func Dial(ctx context.Context, name, addr string, timeout time.Duration, logf Logf) (net.Conn, error) {
	var conn net.Conn
	dialer := net.Dialer{Timeout: 10 * time.Second}
	err := retry(ctx, timeout, fmt.Sprintf("%s at %s", name, addr), logf, func() error {
		var err error
		conn, err = dialer.DialContext(ctx, "tcp", addr)
		return err
	})
	return conn, err
}

// Backoff bounds and how often a wait is reported.
const (
	firstDelay  = 50 * time.Millisecond
	maxDelay    = 2 * time.Second
	logInterval = 10 * time.Second
)

// retry calls attempt until it succeeds, ctx ends or timeout passes, logging
// the first failure and then every logInterval.
func retry(ctx context.Context, timeout time.Duration, what string, logf Logf, attempt func() error) error {
	start := time.Now()
	deadline := start.Add(timeout)
	delay := firstDelay
	var lastLog time.Time
	for {
		err := attempt()
		if err == nil {
			if !lastLog.IsZero() {
				logf("reached %s after %s", what, time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		now := time.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("%s unreachable after %s: %w", what, timeout, err)
		}
		if now.Sub(lastLog) >= logInterval {
			logf("waiting for %s (up to %s): %v", what, deadline.Sub(now).Round(time.Second), err)
			lastLog = now
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, errors.Join(ctx.Err(), err))
		case <-time.After(min(delay, deadline.Sub(now))):
		}
		delay = min(2*delay, maxDelay)
	}
}
