package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Probes, as the kubelet runs them, on containers and sidecars alike:
//   - a startupProbe holds a run back from "started" until it passes; the
//     run's liveness and readiness probes wait for it, and so does the next
//     init container after a sidecar (sidecars.go). failureThreshold
//     failures in a row kill the run;
//   - a readinessProbe makes the container Ready only while it passes
//     (successThreshold passes in a row make it Ready, failureThreshold
//     failures unready); one without is Ready once started;
//   - a livenessProbe kills the run after failureThreshold failures in a
//     row.
// A killed run gets SIGTERM, then SIGKILL after the probe's
// terminationGracePeriodSeconds (else the pod's), and is restarted as the
// restart policy says (shouldRestart). Each probe runs every periodSeconds,
// the first initialDelaySeconds after the run started. The node runs TCP and
// HTTP probes against the pod's address. Exec and gRPC probes are not run:
// such a container counts as started and ready while it runs and is never
// killed by a probe, and the node says so in a warning event
// (docs/local-node.md).

// Defaults of the Probe API.
const (
	defaultProbePeriod  = 10
	defaultProbeTimeout = 1
	defaultProbeFailure = 3
)

// runsProbe reports whether p is a probe the node runs: TCP or HTTP.
func runsProbe(p *corev1.Probe) bool {
	return p != nil && (p.TCPSocket != nil || p.HTTPGet != nil)
}

// probedReadiness reports whether the node runs the container's readiness
// probe.
func probedReadiness(c *corev1.Container) bool { return runsProbe(c.ReadinessProbe) }

// probe runs the probes of one run of c, which started at started, until
// ctx ends (the run ended): the startup probe until it passes, then the
// liveness and readiness probes.
func (r *podRuntime) probe(ctx context.Context, c *containerRun, proc containerProcess, started time.Time) {
	r.warnProbesNotRun(c)
	if runsProbe(c.spec.StartupProbe) && !r.awaitStartup(ctx, c, proc, started) {
		return
	}
	var wg sync.WaitGroup
	if runsProbe(c.spec.LivenessProbe) {
		wg.Go(func() {
			r.probeLoop(ctx, c, "Liveness", c.spec.LivenessProbe, started, func(healthy bool) bool {
				if !healthy {
					r.killForProbe(c, proc, c.spec.LivenessProbe, "liveness")
				}
				return !healthy
			})
		})
	}
	if probedReadiness(c.spec) {
		wg.Go(func() {
			r.probeLoop(ctx, c, "Readiness", c.spec.ReadinessProbe, started, func(ready bool) bool {
				r.setReady(c, ready)
				return false
			})
		})
	}
	wg.Wait()
}

// awaitStartup runs the startup probe until it passes, then marks the run
// started; false if the probe failed (it killed the run) or the run ended
// first.
func (r *podRuntime) awaitStartup(ctx context.Context, c *containerRun, proc containerProcess, started time.Time) bool {
	passed := false
	r.probeLoop(ctx, c, "Startup", c.spec.StartupProbe, started, func(ok bool) bool {
		if ok {
			passed = true
			r.mu.Lock()
			c.markStarted()
			r.mu.Unlock()
			r.publish()
		} else {
			r.killForProbe(c, proc, c.spec.StartupProbe, "startup")
		}
		return true
	})
	return passed
}

// probeLoop runs probe p of c every periodSeconds, the first
// initialDelaySeconds after started, until ctx ends or decide returns true.
// It calls decide with true on each pass once successThreshold passed in a
// row, and with false on each failure once failureThreshold failed in a
// row. kind names the probe in its events ("Readiness").
func (r *podRuntime) probeLoop(ctx context.Context, c *containerRun, kind string, p *corev1.Probe, started time.Time, decide func(bool) bool) {
	period := secondsOr(p.PeriodSeconds, defaultProbePeriod)
	timeout := secondsOr(p.TimeoutSeconds, defaultProbeTimeout)
	needOK, needFail := max(p.SuccessThreshold, 1), p.FailureThreshold
	if needFail <= 0 {
		needFail = defaultProbeFailure
	}
	next := r.deps.clock.After(started.Add(time.Duration(p.InitialDelaySeconds) * time.Second).Sub(r.deps.clock.Now()))
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
		} else {
			oks, fails = 0, fails+1
			r.warnOnce(c, "Unhealthy", kind+" probe failed: "+err.Error())
		}
		if (oks >= needOK && decide(true)) || (fails >= needFail && decide(false)) {
			return
		}
		next = r.deps.clock.After(period)
	}
}

// killForProbe ends a run its startup or liveness probe failed: SIGTERM,
// then SIGKILL once the probe's terminationGracePeriodSeconds (else the
// pod's grace period) is over. The run counts as failed.
func (r *podRuntime) killForProbe(c *containerRun, proc containerProcess, p *corev1.Probe, kind string) {
	r.mu.Lock()
	c.probeKilled = true
	grace := gracePeriod(r.pod)
	policy := r.pod.Spec.RestartPolicy
	r.mu.Unlock()
	if p.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
	}
	msg := fmt.Sprintf("Container %s failed %s probe", c.spec.Name, kind)
	if shouldRestart(policy, c.kind, 0, true) {
		msg += ", will be restarted"
	}
	r.event(corev1.EventTypeNormal, "Killing", msg)
	proc.signal(syscall.SIGTERM)
	timer := r.deps.clock.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-proc.exited():
	case <-timer.C():
		proc.signal(syscall.SIGKILL)
	}
}

// killedByProbe reports whether a startup or liveness probe ended the
// container's latest run.
func (r *podRuntime) killedByProbe(c *containerRun) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return c.probeKilled
}

// warnProbesNotRun says, in a warning event, which of c's probes the node
// does not run (exec and gRPC) and what it does instead.
func (r *podRuntime) warnProbesNotRun(c *containerRun) {
	for _, pr := range []struct {
		probe *corev1.Probe
		means string
	}{
		{c.spec.StartupProbe, "counts as started once it runs"},
		{c.spec.ReadinessProbe, "counts as ready while it runs"},
		{c.spec.LivenessProbe, "is not restarted by its liveness probe"},
	} {
		if pr.probe != nil && !runsProbe(pr.probe) {
			r.warnOnce(c, "ProbeNotRun", fmt.Sprintf("the local node does not run exec or gRPC probes: container %s %s", c.spec.Name, pr.means))
		}
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
