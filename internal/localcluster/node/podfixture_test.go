package node

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// The fixture the container-loop tests (containers_test.go) run on: a
// podRuntime's container loop on a fake clock and a fake process starter.
// No process is started and no test waits for real time to pass: a test
// moves the clock and then polls for what the loop does.

// fakeProcess is a container "process" that exits when the test says, or
// when signalled as a real one would be.
type fakeProcess struct {
	// honorsTERM makes SIGTERM end the process (exit code 143).
	honorsTERM bool

	mu      sync.Mutex
	signals []syscall.Signal
	done    chan struct{}
	code    int32
}

func (p *fakeProcess) exited() <-chan struct{} { return p.done }

func (p *fakeProcess) exitCode() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

func (p *fakeProcess) signal(sig syscall.Signal) {
	p.mu.Lock()
	p.signals = append(p.signals, sig)
	p.mu.Unlock()
	switch {
	case sig == syscall.SIGKILL:
		p.exit(128 + int32(syscall.SIGKILL))
	case sig == syscall.SIGTERM && p.honorsTERM:
		p.exit(128 + int32(syscall.SIGTERM))
	}
}

// exit ends the process with code, unless it has ended already.
func (p *fakeProcess) exit(code int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	p.code = code
	close(p.done)
}

func (p *fakeProcess) receivedSignals() []syscall.Signal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]syscall.Signal(nil), p.signals...)
}

// fakeStarter records the processes the loop starts, in order.
type fakeStarter struct {
	honorsTERM bool

	mu      sync.Mutex
	started []*fakeProcess
	specs   []processSpec
}

func (s *fakeStarter) start(spec processSpec) (containerProcess, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &fakeProcess{honorsTERM: s.honorsTERM, done: make(chan struct{})}
	s.started = append(s.started, p)
	s.specs = append(s.specs, spec)
	return p, nil
}

func (s *fakeStarter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.started)
}

// process is the i-th process started (from 0).
func (s *fakeStarter) process(i int) *fakeProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started[i]
}

// commands are the last words of the command lines started so far, in
// order: the container's name, for the containers of namedPod.
func (s *fakeStarter) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, spec := range s.specs {
		out = append(out, spec.Args[len(spec.Args)-1])
	}
	return out
}

// podFixture runs one pod on fakes.
type podFixture struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	procs *fakeStarter
	r     *podRuntime

	mu       sync.Mutex
	last     *corev1.Pod
	released []types.UID
	// inAPI is the pod the API holds, as the node's cache would see it.
	inAPI *corev1.Pod
	// listening are the addresses the pod's probes reach; dials counts the
	// probes' dials of each address.
	listening map[string]bool
	dials     map[string]int
}

var fixtureStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// runPod starts a pod's runtime on a fake clock and procs, and stops it at
// the end of the test.
func runPod(t *testing.T, pod *corev1.Pod, procs *fakeStarter) *podFixture {
	t.Helper()
	images, err := LoadImageTable("")
	if err != nil {
		t.Fatal(err)
	}
	return runPodWithImages(t, pod, procs, images)
}

// runPodWithImages is runPod with an image table of the test's.
func runPodWithImages(t *testing.T, pod *corev1.Pod, procs *fakeStarter, images *ImageTable) *podFixture {
	t.Helper()
	return runPodWithSource(t, pod, procs, newImageSource(images, nil, nil))
}

// runPodWithSource is runPod with the test's image source, which pods may
// share (paddlepull_test.go).
func runPodWithSource(t *testing.T, pod *corev1.Pod, procs *fakeStarter, images *imageSource) *podFixture {
	t.Helper()
	f := &podFixture{t: t, clock: clocktesting.NewFakeClock(fixtureStart), procs: procs,
		listening: map[string]bool{}, dials: map[string]int{}}
	f.inAPI = pod.DeepCopy()
	f.inAPI.Status = corev1.PodStatus{}
	deps := &podDeps{
		log:       logr.Discard(),
		clock:     f.clock,
		recorder:  record.NewFakeRecorder(1000),
		processes: procs,
		images:    images,
		setUpVolume: func(_ context.Context, _, _ string, v *corev1.Volume) (podVolume, error) {
			return podVolume{}, fmt.Errorf("volume %s: these tests have none", v.Name)
		},
		release: func(uid types.UID) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.released = append(f.released, uid)
		},
		apiPod: func(string, string, types.UID) *corev1.Pod {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.inAPI
		},
		notify: func(p *corev1.Pod) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.last = p
		},
		bwrapPath:   func() (string, error) { return "/usr/bin/bwrap", nil },
		dial:        f.dial,
		podsDir:     t.TempDir(),
		nodeIP:      "127.0.0.1",
		hostname:    "node",
		defaultPath: standardPath,
		// The containers use no image files: the host file system is not read.
		hostFS: fstest.MapFS{},
	}
	f.r = newPodRuntime(deps, pod, fixturePodIP, nil)
	go f.r.run()
	t.Cleanup(func() {
		// A fake process always exits on SIGKILL, which a zero grace
		// period sends at once.
		f.r.stop(0, false)
		select {
		case <-f.r.done:
		case <-time.After(10 * time.Second):
			t.Error("the pod's runtime did not end after a stop")
		}
	})
	return f
}

// fixturePodIP is the address the fixture's pods get, which probes dial.
const fixturePodIP = "127.1.0.100"

// dial stands for the pod's network: a probe's dial succeeds while the
// test says the address listens.
func (f *podFixture) dial(_ context.Context, _, address string) (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dials[address]++
	if !f.listening[address] {
		return nil, fmt.Errorf("dial tcp %s: connection refused", address)
	}
	client, server := net.Pipe()
	server.Close()
	return client, nil
}

// listen makes the pod's port accept (true) or refuse (false) probes.
func (f *podFixture) listen(port string, accept bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listening[net.JoinHostPort(fixturePodIP, port)] = accept
}

// dialsOf is how many times the probes dialed the pod's port.
func (f *podFixture) dialsOf(port string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dials[net.JoinHostPort(fixturePodIP, port)]
}

// probeUntil moves the clock a second at a time, letting the probes run,
// until cond holds; it fails the test after 10s of real time.
func (f *podFixture) probeUntil(what string, cond func() bool) {
	f.t.Helper()
	eventually(f.t, what, func() bool {
		if cond() {
			return true
		}
		f.clock.Step(time.Second)
		return false
	})
}

// status is the latest container status the runtime reported for name.
func (f *podFixture) status(name string) (corev1.ContainerStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		return corev1.ContainerStatus{}, false
	}
	for _, s := range append(append([]corev1.ContainerStatus(nil), f.last.Status.InitContainerStatuses...), f.last.Status.ContainerStatuses...) {
		if s.Name == name {
			return s, true
		}
	}
	return corev1.ContainerStatus{}, false
}

func (f *podFixture) phase() corev1.PodPhase {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		return ""
	}
	return f.last.Status.Phase
}

// eventually polls cond until it holds, failing the test after 10s of real
// time (the loop's goroutines only need to be scheduled).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("not reached within 10s: %s", what)
	}
}

// waitStarted waits until the loop has started n processes and returns the
// latest.
func (f *podFixture) waitStarted(n int) *fakeProcess {
	f.t.Helper()
	eventually(f.t, fmt.Sprintf("%d container runs started", n), func() bool { return f.procs.count() >= n })
	if got := f.procs.count(); got != n {
		f.t.Fatalf("%d container runs started, want %d", got, n)
	}
	return f.procs.process(n - 1)
}

// waitBackingOff waits until the container waits in CrashLoopBackOff on the
// clock, and returns its status.
func (f *podFixture) waitBackingOff(container string) corev1.ContainerStatus {
	f.t.Helper()
	var s corev1.ContainerStatus
	eventually(f.t, container+" waiting in CrashLoopBackOff on the clock", func() bool {
		var ok bool
		s, ok = f.status(container)
		return ok && s.State.Waiting != nil && s.State.Waiting.Reason == reasonCrashLoopBackOff && f.clock.HasWaiters()
	})
	return s
}

// waitDone waits until the pod's runtime has ended: no container will run
// again.
func (f *podFixture) waitDone() {
	f.t.Helper()
	eventually(f.t, "the pod's runtime ends", func() bool {
		select {
		case <-f.r.done:
			return true
		default:
			return false
		}
	})
}

func crashPod(policy corev1.RestartPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "crash", UID: "uid-crash"},
		Spec: corev1.PodSpec{
			RestartPolicy: policy,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "exit"}}},
		},
	}
}

// named is a container whose command line ends in its name, which
// fakeStarter.commands reports.
func named(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", Command: []string{"sh", "-c", name}}
}

// namedPod is a pod of one container, "main", after the init containers,
// each named as named names it.
func namedPod(policy corev1.RestartPolicy, inits ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "named", UID: "uid-named"},
		Spec:       corev1.PodSpec{RestartPolicy: policy, InitContainers: inits, Containers: []corev1.Container{named("main")}},
	}
}

// tcpProbe probes the pod's port every second.
func tcpProbe(port int32, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}},
		PeriodSeconds: 1, FailureThreshold: failureThreshold}
}

// wantCommands checks which containers started so far, in order.
func (f *podFixture) wantCommands(want ...string) {
	f.t.Helper()
	if got := f.procs.commands(); !slices.Equal(got, want) {
		f.t.Fatalf("started %v, want %v", got, want)
	}
}

// condition is the pod condition the runtime last reported.
func (f *podFixture) condition(t corev1.PodConditionType) corev1.PodCondition {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		return corev1.PodCondition{}
	}
	c, _ := findCondition(f.last.Status.Conditions, t)
	return c
}

// nth waits until the n-th process (from 1) has started and returns it;
// others may have started since, unlike waitStarted.
func (f *podFixture) nth(n int) *fakeProcess {
	f.t.Helper()
	eventually(f.t, fmt.Sprintf("%d container runs started", n), func() bool { return f.procs.count() >= n })
	return f.procs.process(n - 1)
}

// waitSignals waits until p has received n signals.
func (f *podFixture) waitSignals(p *fakeProcess, what string, n int) {
	f.t.Helper()
	eventually(f.t, what, func() bool { return len(p.receivedSignals()) >= n })
}
