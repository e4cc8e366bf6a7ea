package node

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// These tests run probes on the container loop's fakes (podfixture_test.go):
// the fake clock paces them and the fixture's dial stands for the pod's
// ports.

// A liveness probe that fails failureThreshold times in a row kills the run
// (SIGTERM), which then counts as failed: it is restarted unless the
// restartPolicy is Never, even when the program exits 0 on SIGTERM.
func TestLivenessProbeKillsTheRun(t *testing.T) {
	tests := []struct {
		policy corev1.RestartPolicy
		// exitOnTERM is the exit code the program ends with on SIGTERM.
		exitOnTERM  int32
		wantRestart bool
	}{
		{corev1.RestartPolicyAlways, 143, true},
		{corev1.RestartPolicyOnFailure, 0, true},
		{corev1.RestartPolicyNever, 143, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s exit %d", tc.policy, tc.exitOnTERM), func(t *testing.T) {
			pod := namedPod(tc.policy)
			pod.Spec.Containers[0].LivenessProbe = tcpProbe(8080, 2)
			f := runPod(t, pod, &fakeStarter{})
			f.listen("8080", true)
			p := f.waitStarted(1)
			f.probeUntil("liveness probes passing", func() bool { return f.dialsOf("8080") >= 3 })
			if sigs := p.receivedSignals(); len(sigs) != 0 {
				t.Fatalf("got %v while the liveness probe passes", sigs)
			}
			f.listen("8080", false)
			f.probeUntil("SIGTERM after failed liveness probes", func() bool { return len(p.receivedSignals()) > 0 })
			p.exit(tc.exitOnTERM)
			if !tc.wantRestart {
				f.waitDone()
				if got := f.phase(); got != corev1.PodFailed {
					t.Errorf("phase %s, want Failed", got)
				}
				return
			}
			f.probeUntil("main restarted", func() bool { return f.procs.count() == 2 })
			if sigs := p.receivedSignals(); len(sigs) != 1 || sigs[0] != syscall.SIGTERM {
				t.Errorf("first run got %v, want SIGTERM alone", sigs)
			}
		})
	}
}

// A run killed by its liveness probe that ignores SIGTERM gets SIGKILL once
// the probe's terminationGracePeriodSeconds is over.
func TestLivenessProbeKillUsesTheProbesGracePeriod(t *testing.T) {
	pod := namedPod(corev1.RestartPolicyAlways)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600)
	probe := tcpProbe(8080, 1)
	probe.TerminationGracePeriodSeconds = ptr.To[int64](5)
	pod.Spec.Containers[0].LivenessProbe = probe
	f := runPod(t, pod, &fakeStarter{})
	p := f.waitStarted(1)
	f.probeUntil("SIGKILL after the probe's grace period", func() bool { return len(p.receivedSignals()) == 2 })
	if sigs := p.receivedSignals(); sigs[0] != syscall.SIGTERM || sigs[1] != syscall.SIGKILL {
		t.Errorf("signals %v, want SIGTERM then SIGKILL", sigs)
	}
	if now := f.clock.Since(fixtureStart); now >= time.Hour {
		t.Errorf("SIGKILL came %s after the start: the pod's grace period, not the probe's 5s", now)
	}
}

// Until its startup probe passes a run is not started: its liveness and
// readiness probes do not run and it is not ready. Once it passes they run.
func TestStartupProbeHoldsTheOtherProbes(t *testing.T) {
	pod := namedPod(corev1.RestartPolicyAlways)
	c := &pod.Spec.Containers[0]
	c.StartupProbe = tcpProbe(8080, 1000)
	c.LivenessProbe = tcpProbe(8081, 1000)
	c.ReadinessProbe = tcpProbe(8082, 1000)
	f := runPod(t, pod, &fakeStarter{})
	f.waitStarted(1)
	f.probeUntil("failed startup probes", func() bool { return f.dialsOf("8080") >= 3 })
	if n, m := f.dialsOf("8081"), f.dialsOf("8082"); n+m != 0 {
		t.Errorf("liveness and readiness probes ran %d and %d times before the startup probe passed", n, m)
	}
	if s, _ := f.status("main"); ptr.Deref(s.Started, true) || s.Ready {
		t.Errorf("main %+v, want neither started nor ready", s)
	}
	if c := f.condition(corev1.PodReady); c.Status != corev1.ConditionFalse {
		t.Errorf("Ready condition %+v, want False", c)
	}

	f.listen("8080", true)
	f.listen("8082", true)
	f.probeUntil("liveness and readiness probes running", func() bool { return f.dialsOf("8081") > 0 && f.dialsOf("8082") > 0 })
	eventually(t, "main started and ready", func() bool {
		s, _ := f.status("main")
		return ptr.Deref(s.Started, false) && s.Ready && f.condition(corev1.PodReady).Status == corev1.ConditionTrue
	})
}
