package node

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// These tests run a podRuntime's container loop on the fake clock and fake
// process starter of podfixture_test.go.

// TestContainerRestartsAsRestartPolicySays: a container that exits is run
// again after a back-off, or not, as the pod's restartPolicy says; an init
// container that fails is retried unless the policy is Never, and the
// containers wait for it.
func TestContainerRestartsAsRestartPolicySays(t *testing.T) {
	tests := []struct {
		name        string
		policy      corev1.RestartPolicy
		init        bool
		exitCode    int32
		wantRestart bool
		// wantPhase is the pod's phase once it is over, without a restart.
		wantPhase corev1.PodPhase
	}{
		{name: "Always restarts a container that succeeded", policy: corev1.RestartPolicyAlways, exitCode: 0, wantRestart: true},
		{name: "Always restarts a container that failed", policy: corev1.RestartPolicyAlways, exitCode: 1, wantRestart: true},
		{name: "the default policy is Always", policy: "", exitCode: 0, wantRestart: true},
		{name: "OnFailure restarts a container that failed", policy: corev1.RestartPolicyOnFailure, exitCode: 2, wantRestart: true},
		{name: "OnFailure leaves a container that succeeded", policy: corev1.RestartPolicyOnFailure, exitCode: 0, wantPhase: corev1.PodSucceeded},
		{name: "Never leaves a container that failed", policy: corev1.RestartPolicyNever, exitCode: 1, wantPhase: corev1.PodFailed},
		{name: "Never leaves a container that succeeded", policy: corev1.RestartPolicyNever, exitCode: 0, wantPhase: corev1.PodSucceeded},
		{name: "a failed init container is retried under Always", policy: corev1.RestartPolicyAlways, init: true, exitCode: 1, wantRestart: true},
		{name: "a failed init container is retried under OnFailure", policy: corev1.RestartPolicyOnFailure, init: true, exitCode: 1, wantRestart: true},
		{name: "a failed init container fails the pod under Never", policy: corev1.RestartPolicyNever, init: true, exitCode: 1, wantPhase: corev1.PodFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := crashPod(tc.policy)
			first := "main"
			if tc.init {
				first = "setup"
				pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox", Command: []string{"sh", "-c", "exit"}}}
			}
			f := runPod(t, pod, &fakeStarter{})
			f.waitStarted(1).exit(tc.exitCode)

			if !tc.wantRestart {
				f.waitDone()
				if got := f.procs.count(); got != 1 {
					t.Errorf("%d runs, want 1: the container was not to run again", got)
				}
				if phase := f.phase(); phase != tc.wantPhase {
					t.Errorf("phase %s, want %s", phase, tc.wantPhase)
				}
				s, _ := f.status(first)
				if s.State.Terminated == nil || s.State.Terminated.ExitCode != tc.exitCode {
					t.Errorf("%s state %+v, want terminated with exit code %d", first, s.State, tc.exitCode)
				}
				return
			}

			s := f.waitBackingOff(first)
			if s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != tc.exitCode {
				t.Errorf("last state %+v, want terminated with exit code %d", s.LastTerminationState, tc.exitCode)
			}
			f.clock.Step(crashBackoffBase)
			f.waitStarted(2)
			eventually(t, first+" reported running again, restarted once", func() bool {
				s, _ = f.status(first)
				return s.RestartCount == 1 && s.State.Running != nil
			})
			if tc.init {
				// The containers wait for the init container to succeed.
				if s, _ := f.status("main"); s.State.Waiting == nil {
					t.Errorf("main ran before its init container succeeded: %+v", s.State)
				}
			}
		})
	}
}

// TestCrashLoopBackOffTiming: each restart of a container that keeps
// crashing waits twice as long as the one before, from crashBackoffBase up to
// crashBackoffMax, and not a moment less.
func TestCrashLoopBackOffTiming(t *testing.T) {
	wantWaits := []time.Duration{
		1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second,
		5 * time.Minute, 5 * time.Minute,
	}
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			f := runPod(t, crashPod(policy), &fakeStarter{})
			for i, wait := range wantWaits {
				f.waitStarted(i + 1).exit(1)
				s := f.waitBackingOff("main")
				if want := fmt.Sprintf("back-off %s restarting failed container=main", wait); !strings.Contains(s.State.Waiting.Message, want) {
					t.Fatalf("crash %d: waiting message %q, want it to say %q", i+1, s.State.Waiting.Message, want)
				}
				if s.RestartCount != int32(i) {
					t.Errorf("crash %d: restart count %d, want %d", i+1, s.RestartCount, i)
				}
				// The back-off has not run out a nanosecond early: the fake
				// clock's timer has not fired, so nothing can have started.
				f.clock.Step(wait - time.Nanosecond)
				if !f.clock.HasWaiters() || f.procs.count() != i+1 {
					t.Fatalf("crash %d: restarted before its %s back-off ran out", i+1, wait)
				}
				f.clock.Step(time.Nanosecond)
			}
			f.waitStarted(len(wantWaits) + 1)
		})
	}
}

// TestCrashLoopBackOffResetsAfterALongRun: a container that ran for
// crashBackoffReset before it crashed starts over at the base delay.
func TestCrashLoopBackOffResetsAfterALongRun(t *testing.T) {
	tests := []struct {
		ranFor   time.Duration
		wantWait time.Duration
	}{
		{ranFor: crashBackoffReset - time.Second, wantWait: 4 * time.Second},
		{ranFor: crashBackoffReset, wantWait: crashBackoffBase},
	}
	for _, tc := range tests {
		t.Run(tc.ranFor.String(), func(t *testing.T) {
			f := runPod(t, crashPod(corev1.RestartPolicyAlways), &fakeStarter{})
			// Two quick crashes: the next back-off would be 4s.
			for i, wait := range []time.Duration{time.Second, 2 * time.Second} {
				f.waitStarted(i + 1).exit(1)
				f.waitBackingOff("main")
				f.clock.Step(wait)
			}
			p := f.waitStarted(3)
			f.clock.Step(tc.ranFor)
			p.exit(1)
			s := f.waitBackingOff("main")
			if want := fmt.Sprintf("back-off %s ", tc.wantWait); !strings.Contains(s.State.Waiting.Message, want) {
				t.Errorf("after a run of %s: waiting message %q, want a back-off of %s", tc.ranFor, s.State.Waiting.Message, tc.wantWait)
			}
		})
	}
}

// TestStopDuringBackOffStartsNothing: a pod stopped while a container waits
// out its back-off ends without running it again.
func TestStopDuringBackOffStartsNothing(t *testing.T) {
	f := runPod(t, crashPod(corev1.RestartPolicyAlways), &fakeStarter{})
	f.waitStarted(1).exit(1)
	f.waitBackingOff("main")
	f.r.stop(30*time.Second, false)
	f.waitDone()
	if got := f.procs.count(); got != 1 {
		t.Errorf("%d runs, want 1: a stopped pod's container was started again", got)
	}
	f.mu.Lock()
	released := f.released
	f.mu.Unlock()
	if len(released) != 1 || released[0] != "uid-crash" {
		t.Errorf("released %v, want the pod's IP and tokens released once", released)
	}
}

// TestGracePeriod: stopping a pod sends SIGTERM to its containers, then
// SIGKILL to those still running when the grace period (the pod's
// deletionGracePeriodSeconds, else terminationGracePeriodSeconds, else 30s)
// is over; a later stop can shorten it, not lengthen it.
func TestGracePeriod(t *testing.T) {
	tests := []gracePeriodCase{
		{name: "SIGTERM ends a container that honors it", terminationGrace: ptr.To[int64](30), honorsTERM: true},
		{name: "SIGKILL after terminationGracePeriodSeconds", terminationGrace: ptr.To[int64](10), wantKillAt: 10 * time.Second},
		{name: "the API's default grace period is 30s", wantKillAt: 30 * time.Second},
		{name: "deletionGracePeriodSeconds wins", terminationGrace: ptr.To[int64](60), deletionGrace: ptr.To[int64](3), wantKillAt: 3 * time.Second},
		{name: "a zero grace period kills at once", terminationGrace: ptr.To[int64](0), wantKillAt: 0},
		{name: "a later stop shortens the grace period", terminationGrace: ptr.To[int64](30), then: 5 * time.Second, thenGrace: 2 * time.Second, wantKillAt: 7 * time.Second},
		{name: "a later stop cannot lengthen it", terminationGrace: ptr.To[int64](10), then: 5 * time.Second, thenGrace: time.Minute, wantKillAt: 10 * time.Second},
		{name: "a stopped container is not restarted under Always", restartPolicy: corev1.RestartPolicyAlways, terminationGrace: ptr.To[int64](5), wantKillAt: 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkGracePeriod(t, tc) })
	}
}

// gracePeriodCase is one pod stopped once, or twice, and what it receives.
type gracePeriodCase struct {
	name             string
	terminationGrace *int64
	deletionGrace    *int64
	honorsTERM       bool
	restartPolicy    corev1.RestartPolicy
	// then, when set, is a second stop that long after the first.
	then      time.Duration
	thenGrace time.Duration
	// wantKillAt is when SIGKILL is due, after the first stop; zero
	// when SIGTERM ends the container.
	wantKillAt time.Duration
}

// checkGracePeriod runs a pod, stops it as the Provider does when the pod
// is deleted, and checks the signals, when SIGKILL comes (not a nanosecond
// early), the exit code, and that the container is not run again.
func checkGracePeriod(t *testing.T, tc gracePeriodCase) {
	t.Helper()
	policy := tc.restartPolicy
	if policy == "" {
		policy = corev1.RestartPolicyNever
	}
	pod := crashPod(policy)
	pod.Spec.TerminationGracePeriodSeconds = tc.terminationGrace
	f := runPod(t, pod, &fakeStarter{honorsTERM: tc.honorsTERM})
	p := f.waitStarted(1)
	eventually(t, "the container is reported running", func() bool {
		s, ok := f.status("main")
		return ok && s.State.Running != nil
	})

	// As the Provider does when the pod is deleted.
	deleted := pod.DeepCopy()
	deleted.DeletionGracePeriodSeconds = tc.deletionGrace
	f.r.stop(gracePeriod(deleted), false)
	eventually(t, "SIGTERM sent", func() bool { return len(p.receivedSignals()) >= 1 })
	if sig := p.receivedSignals()[0]; sig != syscall.SIGTERM {
		t.Fatalf("first signal %v, want SIGTERM", sig)
	}

	wantKill := !tc.honorsTERM
	if wantKill && tc.wantKillAt > 0 {
		// awaitExit waits on the clock for the grace period to end.
		eventually(t, "the grace period timer set", f.clock.HasWaiters)
		elapsed := time.Duration(0)
		if tc.then > 0 {
			f.clock.Step(tc.then)
			elapsed = tc.then
			f.r.stop(tc.thenGrace, false)
			// The loop re-arms its timer for the new deadline.
			eventually(t, "the grace period timer re-armed", f.clock.HasWaiters)
		}
		f.clock.Step(tc.wantKillAt - elapsed - time.Nanosecond)
		if sigs := p.receivedSignals(); len(sigs) != 1 {
			t.Fatalf("signals %v a nanosecond before the grace period ends, want SIGTERM alone", sigs)
		}
		f.clock.Step(time.Nanosecond)
	}
	f.waitDone()

	want := []syscall.Signal{syscall.SIGTERM}
	wantCode := int32(143)
	if wantKill {
		want = append(want, syscall.SIGKILL)
		wantCode = 137
	}
	if got := p.receivedSignals(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("signals %v, want %v", got, want)
	}
	s, _ := f.status("main")
	if s.State.Terminated == nil || s.State.Terminated.ExitCode != wantCode {
		t.Errorf("state %+v, want terminated with exit code %d", s.State, wantCode)
	}
	if got := f.procs.count(); got != 1 {
		t.Errorf("%d runs, want 1: a stopped container is not run again", got)
	}
}

// The status the node reports carries the API's metadata, not the copy the
// pod's runtime started with: virtual-kubelet writes the whole pod to
// pods/status, and an older copy would erase annotations added since. GetPod
// keeps the runtime's copy, which virtual-kubelet compares with the API's.
func TestStatusReportsKeepTheAPIsMetadata(t *testing.T) {
	f := runPod(t, crashPod(corev1.RestartPolicyNever), &fakeStarter{})
	f.waitStarted(1)
	annotated := crashPod(corev1.RestartPolicyNever)
	annotated.Annotations = map[string]string{"batch.paddlepaddle.org/endpoints": "v1"}
	annotated.ResourceVersion = "42"
	f.mu.Lock()
	f.inAPI = annotated
	f.mu.Unlock()

	f.r.publish()
	f.mu.Lock()
	reported := f.last.DeepCopy()
	f.mu.Unlock()
	if got := reported.Annotations["batch.paddlepaddle.org/endpoints"]; got != "v1" {
		t.Errorf("reported annotations %v, want the API's endpoints annotation v1", reported.Annotations)
	}
	if reported.ResourceVersion != "42" {
		t.Errorf("reported resourceVersion %q, want the API's 42", reported.ResourceVersion)
	}
	if len(reported.Status.ContainerStatuses) != 1 || reported.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("reported container statuses %+v, want main running", reported.Status.ContainerStatuses)
	}
	if annotated.Status.Phase != "" {
		t.Errorf("the API's pod was modified: phase %q", annotated.Status.Phase)
	}
	if got := f.r.snapshot().Annotations; len(got) != 0 {
		t.Errorf("GetPod's view has annotations %v; want the runtime's own copy (none), so that virtual-kubelet passes the API's on", got)
	}
}
