package node

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// These tests run a pod with sidecars (init containers with restartPolicy
// Always) on the container loop's fakes (podfixture_test.go): what the node
// starts next, what it restarts, and when and in which order it stops the
// sidecars.

func asSidecar(c corev1.Container) corev1.Container {
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

// A sidecar without a startup probe has started once its process runs: the
// next init container starts then, beside it, and the containers once that
// one completed. The sidecar is Running, started and ready throughout, and
// the pod Initialized only once every init container completed or started.
func TestNextInitContainerStartsOnceASidecarRuns(t *testing.T) {
	f := runPod(t, namedPod(corev1.RestartPolicyNever, asSidecar(named("proxy")), named("setup")), &fakeStarter{})
	proxy := f.nth(1)
	setup := f.waitStarted(2)
	f.wantCommands("proxy", "setup")
	eventually(t, "setup reported running", func() bool { s, _ := f.status("setup"); return s.State.Running != nil })
	if s, _ := f.status("proxy"); s.State.Running == nil || !ptr.Deref(s.Started, false) || !s.Ready {
		t.Errorf("proxy %+v, want running, started and ready", s)
	}
	if c := f.condition(corev1.PodInitialized); c.Status != corev1.ConditionFalse || c.Message != "containers with incomplete status: [setup]" {
		t.Errorf("Initialized %+v, want False for setup alone", c)
	}
	if phase := f.phase(); phase != corev1.PodPending {
		t.Errorf("phase %s while initializing, want Pending", phase)
	}

	setup.exit(0)
	f.waitStarted(3)
	f.wantCommands("proxy", "setup", "main")
	eventually(t, "the pod Running and Initialized", func() bool {
		return f.phase() == corev1.PodRunning && f.condition(corev1.PodInitialized).Status == corev1.ConditionTrue
	})
	if sigs := proxy.receivedSignals(); len(sigs) != 0 {
		t.Errorf("proxy got %v, want to run on beside main", sigs)
	}
}

// A sidecar with a startup probe has started once the probe passed: until
// then the next init container waits and the sidecar is neither started nor
// ready.
func TestSidecarStartupProbeHoldsTheNextInitContainer(t *testing.T) {
	proxy := asSidecar(named("proxy"))
	proxy.StartupProbe = tcpProbe(8080, 1000)
	f := runPod(t, namedPod(corev1.RestartPolicyNever, proxy, named("setup")), &fakeStarter{})
	f.waitStarted(1)
	f.probeUntil("three failed startup probes", func() bool { return f.dialsOf("8080") >= 3 })
	f.wantCommands("proxy")
	if s, _ := f.status("proxy"); s.State.Running == nil || ptr.Deref(s.Started, false) || s.Ready {
		t.Errorf("proxy %+v, want running, neither started nor ready", s)
	}
	if phase := f.phase(); phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", phase)
	}

	f.listen("8080", true)
	f.probeUntil("setup started once the startup probe passed", func() bool { return f.procs.count() == 2 })
	f.wantCommands("proxy", "setup")
	eventually(t, "proxy reported started and ready", func() bool {
		s, _ := f.status("proxy")
		return ptr.Deref(s.Started, false) && s.Ready
	})
}

// A sidecar whose startup probe fails failureThreshold times is killed and
// started again, under any restartPolicy; the next init container waits for
// a run that starts.
func TestSidecarFailingItsStartupProbeIsRestarted(t *testing.T) {
	proxy := asSidecar(named("proxy"))
	proxy.StartupProbe = tcpProbe(8080, 2)
	f := runPod(t, namedPod(corev1.RestartPolicyNever, proxy, named("setup")), &fakeStarter{honorsTERM: true})
	first := f.waitStarted(1)
	f.probeUntil("proxy run again", func() bool { return f.procs.count() == 2 })
	if sigs := first.receivedSignals(); len(sigs) == 0 || sigs[0] != syscall.SIGTERM {
		t.Errorf("first run got %v, want SIGTERM", sigs)
	}
	f.wantCommands("proxy", "proxy")
	eventually(t, "proxy reported restarted once after exit code 143", func() bool {
		s, _ := f.status("proxy")
		last := s.LastTerminationState.Terminated
		return s.RestartCount == 1 && last != nil && last.ExitCode == 143
	})

	f.listen("8080", true)
	f.probeUntil("setup started", func() bool { return f.procs.count() == 3 })
	f.wantCommands("proxy", "proxy", "setup")
}

// A sidecar is restarted, after the crash back-off, whenever it exits, with
// any exit code and under any restartPolicy; the containers beside it run
// on.
func TestSidecarIsRestartedWhateverThePolicy(t *testing.T) {
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways} {
		for _, code := range []int32{0, 1, 143} {
			t.Run(fmt.Sprintf("%s exit %d", policy, code), func(t *testing.T) {
				f := runPod(t, namedPod(policy, asSidecar(named("proxy"))), &fakeStarter{})
				f.nth(1).exit(code)
				main := f.nth(2)
				f.wantCommands("proxy", "main")
				f.waitBackingOff("proxy")
				f.clock.Step(crashBackoffBase)
				f.waitStarted(3)
				f.wantCommands("proxy", "main", "proxy")
				eventually(t, "proxy running again, restarted once", func() bool {
					s, _ := f.status("proxy")
					return s.State.Running != nil && s.RestartCount == 1
				})
				// main's own status may be published after proxy's.
				eventually(t, "the pod Running", func() bool { return f.phase() == corev1.PodRunning })
				if sigs := main.receivedSignals(); len(sigs) != 0 {
					t.Errorf("main got %v; want main running on", sigs)
				}
			})
		}
	}
}

// When the sidecars stop: once no container will run again, as the pod's
// restartPolicy says, the sidecars get SIGTERM, the last declared first and
// each once the one after it is gone; the containers' exit codes alone
// decide the phase. While a container will run again they run on.
func TestWhenSidecarsStop(t *testing.T) {
	tests := []struct {
		policy   corev1.RestartPolicy
		exitCode int32
		// wantPhase is the phase once the sidecars are gone; "" when they
		// are not to stop.
		wantPhase corev1.PodPhase
	}{
		{corev1.RestartPolicyNever, 0, corev1.PodSucceeded},
		{corev1.RestartPolicyNever, 2, corev1.PodFailed},
		{corev1.RestartPolicyOnFailure, 0, corev1.PodSucceeded},
		{corev1.RestartPolicyOnFailure, 1, ""},
		{corev1.RestartPolicyAlways, 0, ""},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s exit %d", tc.policy, tc.exitCode), func(t *testing.T) {
			f := runPod(t, namedPod(tc.policy, asSidecar(named("first")), asSidecar(named("second"))), &fakeStarter{})
			first, second := f.nth(1), f.nth(2)
			f.waitStarted(3).exit(tc.exitCode)
			if tc.wantPhase == "" {
				f.waitBackingOff("main")
				f.clock.Step(crashBackoffBase)
				f.waitStarted(4)
				if s1, s2 := first.receivedSignals(), second.receivedSignals(); len(s1)+len(s2) != 0 {
					t.Errorf("sidecars got %v and %v while main is restarted, want none", s1, s2)
				}
				return
			}
			f.waitSignals(second, "SIGTERM to the second sidecar", 1)
			if s := f.phase(); s != corev1.PodRunning {
				t.Errorf("phase %s while the sidecars stop, want Running", s)
			}
			if sigs := first.receivedSignals(); len(sigs) != 0 {
				t.Fatalf("first sidecar got %v while the second runs, want nothing yet", sigs)
			}
			second.exit(143)
			f.waitSignals(first, "SIGTERM to the first sidecar once the second is gone", 1)
			first.exit(143)
			f.waitDone()
			if got := f.phase(); got != tc.wantPhase {
				t.Errorf("phase %s, want %s: the containers decide it, not the sidecars' exit 143", got, tc.wantPhase)
			}
			for _, name := range []string{"first", "second"} {
				if s, _ := f.status(name); s.State.Terminated == nil || s.State.Terminated.ExitCode != 143 || s.Ready {
					t.Errorf("sidecar %s %+v, want terminated with exit code 143, not ready", name, s)
				}
			}
			if got := f.procs.count(); got != 3 {
				t.Errorf("%d runs, want 3: a stopped sidecar is not restarted", got)
			}
		})
	}
}

// The sidecars of a pod whose containers are done get SIGKILL when the
// pod's terminationGracePeriodSeconds is over, not a nanosecond sooner.
func TestSidecarsOfACompletedPodGetTheGracePeriod(t *testing.T) {
	pod := namedPod(corev1.RestartPolicyNever, asSidecar(named("proxy")))
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	f := runPod(t, pod, &fakeStarter{})
	proxy := f.nth(1)
	f.waitStarted(2).exit(0)
	f.waitSignals(proxy, "SIGTERM to the sidecar", 1)
	eventually(t, "the grace period timer set", f.clock.HasWaiters)
	f.clock.Step(10*time.Second - time.Nanosecond)
	if sigs := proxy.receivedSignals(); len(sigs) != 1 {
		t.Fatalf("signals %v a nanosecond before the grace period ends, want SIGTERM alone", sigs)
	}
	f.clock.Step(time.Nanosecond)
	f.waitDone()
	if sigs := proxy.receivedSignals(); !slices.Equal(sigs, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}) {
		t.Errorf("signals %v, want SIGTERM then SIGKILL", sigs)
	}
	if got := f.phase(); got != corev1.PodSucceeded {
		t.Errorf("phase %s, want Succeeded: the sidecar's 137 does not count", got)
	}
}

// A deleted pod's containers are stopped first, then its sidecars in reverse
// order; all within the one grace period.
func TestDeletionStopsTheContainersThenTheSidecars(t *testing.T) {
	f := runPod(t, namedPod(corev1.RestartPolicyAlways, asSidecar(named("first")), asSidecar(named("second"))), &fakeStarter{})
	first, second, main := f.nth(1), f.nth(2), f.waitStarted(3)
	eventually(t, "the pod Running", func() bool { return f.phase() == corev1.PodRunning })
	f.r.stop(30*time.Second, false)
	f.waitSignals(main, "SIGTERM to main", 1)
	if s1, s2 := first.receivedSignals(), second.receivedSignals(); len(s1)+len(s2) != 0 {
		t.Fatalf("sidecars got %v and %v while main runs, want nothing yet", s1, s2)
	}
	main.exit(143)
	f.waitSignals(second, "SIGTERM to the second sidecar once main is gone", 1)
	if sigs := first.receivedSignals(); len(sigs) != 0 {
		t.Fatalf("first sidecar got %v while the second runs", sigs)
	}
	second.exit(143)
	f.waitSignals(first, "SIGTERM to the first sidecar", 1)
	// The grace period ran from the delete: SIGKILL when it is over.
	eventually(t, "the grace period timer set", f.clock.HasWaiters)
	f.clock.Step(30 * time.Second)
	f.waitDone()
	if sigs := first.receivedSignals(); !slices.Equal(sigs, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}) {
		t.Errorf("first sidecar got %v, want SIGTERM then SIGKILL", sigs)
	}
	if got := f.phase(); got != corev1.PodFailed {
		t.Errorf("phase %s, want Failed (main stopped with 143)", got)
	}
}

// An init container that fails under restartPolicy Never fails the pod: its
// sidecars are stopped, and the pod stays Pending until they are gone, as
// the kubelet reports no terminal phase while a container runs.
func TestFailedInitContainerStopsTheSidecars(t *testing.T) {
	f := runPod(t, namedPod(corev1.RestartPolicyNever, asSidecar(named("proxy")), named("setup")), &fakeStarter{})
	proxy := f.nth(1)
	f.waitStarted(2).exit(1)
	f.waitSignals(proxy, "SIGTERM to the sidecar", 1)
	if got := f.phase(); got != corev1.PodPending {
		t.Errorf("phase %s while the sidecar stops, want Pending", got)
	}
	proxy.exit(143)
	f.waitDone()
	if got := f.phase(); got != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", got)
	}
	f.wantCommands("proxy", "setup")
}

// A sidecar's readiness counts in the pod's: with a readinessProbe it is
// ready only while the probe passes, and the pod with it.
func TestSidecarReadinessCountsInThePods(t *testing.T) {
	proxy := asSidecar(named("proxy"))
	proxy.ReadinessProbe = tcpProbe(9090, 1)
	f := runPod(t, namedPod(corev1.RestartPolicyAlways, proxy), &fakeStarter{})
	f.nth(1)
	f.waitStarted(2)
	f.probeUntil("the proxy's readiness probed", func() bool { return f.dialsOf("9090") > 0 })
	eventually(t, "ContainersReady False for the proxy", func() bool {
		c := f.condition(corev1.ContainersReady)
		return c.Status == corev1.ConditionFalse && c.Message == "containers with unready status: [proxy]"
	})
	if got := f.phase(); got != corev1.PodRunning {
		t.Errorf("phase %s, want Running: an unready sidecar holds back readiness, not the phase", got)
	}
	f.listen("9090", true)
	f.probeUntil("the pod Ready", func() bool { return f.condition(corev1.PodReady).Status == corev1.ConditionTrue })
	f.listen("9090", false)
	f.probeUntil("the pod not Ready again", func() bool { return f.condition(corev1.PodReady).Status == corev1.ConditionFalse })
}
