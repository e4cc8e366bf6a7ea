package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Readiness probes, as the kubelet runs them: a container with a
// readinessProbe is Ready only while its probe passes (successThreshold
// passes in a row make it Ready, failureThreshold failures unready); one
// without is Ready while it runs. The node runs TCP and HTTP probes against
// the pod's address. Exec and gRPC probes are not run: such a container
// counts as Ready while it runs, and the node says so in a warning event
// (docs/local-node.md).

// Defaults of the Probe API.
const (
	defaultProbePeriod  = 10
	defaultProbeTimeout = 1
	defaultProbeFailure = 3
)

// probedReadiness reports whether the node runs the container's readiness
// probe: it has one of a kind the node runs.
func probedReadiness(c *corev1.Container) bool {
	p := c.ReadinessProbe
	return p != nil && (p.TCPSocket != nil || p.HTTPGet != nil)
}

// probeReadiness runs a container's readiness probe until ctx ends (the
// container's run ended), setting its readiness and publishing each change.
func (r *podRuntime) probeReadiness(ctx context.Context, c *containerRun) {
	p := c.spec.ReadinessProbe
	if p == nil {
		return
	}
	if !probedReadiness(c.spec) {
		r.warnOnce(c, "ProbeNotRun", fmt.Sprintf("the local node does not run exec or gRPC probes: container %s counts as ready while it runs", c.spec.Name))
		return
	}
	period := secondsOr(p.PeriodSeconds, defaultProbePeriod)
	timeout := secondsOr(p.TimeoutSeconds, defaultProbeTimeout)
	needOK, needFail := max(p.SuccessThreshold, 1), p.FailureThreshold
	if needFail <= 0 {
		needFail = defaultProbeFailure
	}
	next := r.deps.clock.After(time.Duration(p.InitialDelaySeconds) * time.Second)
	var oks, fails int32
	for {
		select {
		case <-ctx.Done():
			return
		case <-next:
		}
		err := r.probeOnce(ctx, c.spec, p, timeout)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			oks, fails = oks+1, 0
			if oks >= needOK {
				r.setReady(c, true)
			}
		} else {
			oks, fails = 0, fails+1
			r.warnOnce(c, "Unhealthy", "Readiness probe failed: "+err.Error())
			if fails >= needFail {
				r.setReady(c, false)
			}
		}
		next = r.deps.clock.After(period)
	}
}

// setReady records a container's readiness and publishes a change.
func (r *podRuntime) setReady(c *containerRun, ready bool) {
	r.mu.Lock()
	changed := c.ready != ready
	c.ready = ready
	r.mu.Unlock()
	if changed {
		r.publish()
	}
}

// probeOnce runs one probe; nil is a pass.
func (r *podRuntime) probeOnce(ctx context.Context, c *corev1.Container, p *corev1.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.TCPSocket != nil:
		port, err := probePort(c, p.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := r.deps.dial(ctx, "tcp", net.JoinHostPort(r.probeHost(p.TCPSocket.Host), strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case p.HTTPGet != nil:
		return r.probeHTTP(ctx, c, p.HTTPGet)
	}
	return nil
}

// probeHTTP passes on a status from 200 to 399, as the kubelet's does; it
// does not follow redirects and does not verify a server's certificate.
func (r *podRuntime) probeHTTP(ctx context.Context, c *corev1.Container, g *corev1.HTTPGetAction) error {
	port, err := probePort(c, g.Port)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(r.probeHost(g.Host), strconv.Itoa(port)), Path: g.Path}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{
		// Dialed from the node's network namespace, where pod IPs are.
		Transport:     &http.Transport{DialContext: r.deps.dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}, //nolint:gosec // the kubelet's probes do not verify either
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return nil
}

// probeHost is a probe's host: the pod's address unless it names one.
func (r *podRuntime) probeHost(host string) string {
	if host != "" {
		return host
	}
	return r.ip
}

// probePort resolves a probe's port: a number, or the name of one of the
// container's ports.
func probePort(c *corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, port.StrVal)
}

func secondsOr(s, def int32) time.Duration {
	if s <= 0 {
		s = def
	}
	return time.Duration(s) * time.Second
}
