package node

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeInstaller installs runtimes under /cache once the test lets it, and
// fails while told to.
type fakeInstaller struct {
	mu    sync.Mutex
	calls []string
	fail  error
	// release, when set, holds every install until it is closed.
	release chan struct{}
}

func (f *fakeInstaller) install(_ context.Context, cacheDir, version string) (PaddleRuntime, error) {
	f.mu.Lock()
	f.calls = append(f.calls, cacheDir+" "+version)
	fail, release := f.fail, f.release
	f.mu.Unlock()
	if release != nil {
		<-release
	}
	if fail != nil {
		return PaddleRuntime{}, fail
	}
	// No host paths: the runs bind what exists only.
	return InstalledPaddleRuntime("/cache/paddle-"+version+"/bin", version != "3.3.1", nil, "/usr/bin"), nil
}

func (f *fakeInstaller) installs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// pendingTable has 2.6.2 and 3.0.0 pending, 3.3.1 installed, and an image
// whose PATH names the default release's bin directory before its own, as
// the local cluster's launcher images do.
func pendingTable(t *testing.T) *ImageTable {
	t.Helper()
	rts := &PaddleRuntimes{Default: "3.0.0", CacheDir: "/cache", Releases: map[string]PaddleRuntime{
		"2.6.2": PendingPaddleRuntime("2.6.2", true, "/usr/bin"),
		"3.0.0": PendingPaddleRuntime("3.0.0", true, "/usr/bin"),
		"3.3.1": InstalledPaddleRuntime("/cache/paddle-3.3.1/bin", false, nil, "/usr/bin"),
	}}
	entries := map[string]ImageEntry{
		"paddlepaddle/paddle": {Args: []string{"/bin/bash"}, PaddleRelease: paddleReleaseByTag},
		"example/launcher": {PaddleRelease: "3.0.0",
			Env: map[string]string{"PATH": "/launcher:" + rts.Releases["3.0.0"].Env["PATH"]}},
	}
	table, err := newImageTableWithPaddle("images.yaml", entries, rts)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// A runtime not installed yet is installed when a container first needs
// it, once for every pod waiting on it, with a kubelet's pull events; the
// container then runs on it, its image's PATH naming it.
func TestPaddleRuntimeIsInstalledOnFirstUse(t *testing.T) {
	installer := &fakeInstaller{release: make(chan struct{})}
	src := newImageSource(pendingTable(t), installer.install, nil)

	podA, podB := paddlePod("paddlepaddle/paddle:2.6.2", corev1.RestartPolicyNever), paddlePod("paddlepaddle/paddle:2.6.2", corev1.RestartPolicyNever)
	podB.Name, podB.UID = "job-ps-1", types.UID("uid-ps-1")
	procsA, procsB := &fakeStarter{}, &fakeStarter{}
	a := runPodWithSource(t, podA, procsA, src)
	b := runPodWithSource(t, podB, procsB, src)
	for _, f := range []*podFixture{a, b} {
		eventually(t, "the container waits while the runtime installs", func() bool {
			s, ok := f.status("paddle")
			return ok && s.State.Waiting != nil && s.State.Waiting.Reason == reasonContainerCreating &&
				strings.Contains(s.State.Waiting.Message, "installing the Paddle 2.6.2 runtime")
		})
	}
	close(installer.release)
	a.waitStarted(1).exit(0)
	b.waitStarted(1).exit(0)
	a.waitDone()
	b.waitDone()
	if got := installer.installs(); len(got) != 1 || got[0] != "/cache 2.6.2" {
		t.Errorf("installs %q; want one of 2.6.2 into /cache", got)
	}
	for _, f := range []*podFixture{a, b} {
		ev := events(f)
		if !strings.Contains(ev, `Normal Pulling Pulling image "paddlepaddle/paddle:2.6.2": installing the Paddle 2.6.2 runtime it runs on`) ||
			!strings.Contains(ev, `Normal Pulled Successfully pulled image "paddlepaddle/paddle:2.6.2" in `) {
			t.Errorf("events:\n%s", ev)
		}
	}
	spec := procsA.specs[0]
	if path := envOf(spec.Env, "PATH"); path != "/cache/paddle-2.6.2/bin:/usr/bin" {
		t.Errorf("PATH %q; want 2.6.2's", path)
	}

	// The next pod of it starts at once; one of the image naming the
	// pending default in its PATH gets the installed one's.
	if _, _, err := src.pull("2.6.2"); err != nil {
		t.Fatal(err)
	}
	installer.release = nil
	procsC := &fakeStarter{}
	c := runPodWithSource(t, paddlePod("example/launcher", corev1.RestartPolicyNever), procsC, src)
	c.waitStarted(1).exit(0)
	c.waitDone()
	if path := envOf(procsC.specs[0].Env, "PATH"); path != "/launcher:/cache/paddle-3.0.0/bin:/usr/bin" {
		t.Errorf("launcher image's PATH %q; want the launcher's, then 3.0.0's", path)
	}
	if got := installer.installs(); len(got) != 2 || got[1] != "/cache 3.0.0" {
		t.Errorf("installs %q; want 2.6.2's, then 3.0.0's", got)
	}
	if entry, _ := src.current().Lookup("paddlepaddle/paddle:3.3.1"); src.current().pendingPaddle(entry) != "" {
		t.Error("3.3.1 is pending")
	}
}

// A failed install keeps the container waiting with ErrImagePull and why,
// then ImagePullBackOff; once the back-off is over it is tried again.
func TestPaddleRuntimeInstallFailureBacksOff(t *testing.T) {
	installer := &fakeInstaller{fail: errors.New("cannot reach the Python package index")}
	clock := clocktesting.NewFakeClock(fixtureStart)
	src := newImageSource(pendingTable(t), installer.install, clock)
	procs := &fakeStarter{}
	f := runPodWithSource(t, paddlePod("paddlepaddle/paddle:2.6.2", corev1.RestartPolicyNever), procs, src)
	// The container's status is set before its retry timer: the clock may
	// only move once the timer waits on it, or the step is lost.
	waitReason := func(reason, message string) {
		t.Helper()
		eventually(t, "the container waits with "+reason+" on the clock", func() bool {
			s, ok := f.status("paddle")
			return ok && s.State.Waiting != nil && s.State.Waiting.Reason == reason && strings.Contains(s.State.Waiting.Message, message) &&
				f.clock.HasWaiters()
		})
	}
	waitReason(reasonErrImagePull, `image "paddlepaddle/paddle:2.6.2": installing the Paddle 2.6.2 runtime it runs on failed: cannot reach the Python package index`)
	f.clock.Step(retryInterval)
	waitReason(reasonImagePullBackOff, `Back-off pulling image "paddlepaddle/paddle:2.6.2"`)
	if n := len(installer.installs()); n != 1 {
		t.Errorf("%d installs during the back-off", n)
	}
	installer.mu.Lock()
	installer.fail = nil
	installer.mu.Unlock()
	clock.Step(pullBackoffInitial)
	f.clock.Step(retryInterval)
	f.waitStarted(1).exit(0)
	f.waitDone()
	if ev := events(f); !strings.Contains(ev, "Warning Failed image") || !strings.Contains(ev, "Warning BackOff Back-off pulling image") {
		t.Errorf("events:\n%s", ev)
	}
}

// An install's progress arrives in pieces that are not lines (pip's output
// as copied): each whole line becomes one entry, the last on Flush.
func TestLogWriterLogsWholeLines(t *testing.T) {
	var got []string
	w := &logWriter{log: funcr.New(func(_, args string) { got = append(got, args) }, funcr.Options{})}
	for _, piece := range []string{"Collecting pad", "dlepaddle==2.6.2\nInstalling", " collected packages\n\n  ", "done"} {
		if _, err := w.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	want := []string{`"level"=0 "msg"="Collecting paddlepaddle==2.6.2"`, `"level"=0 "msg"="Installing collected packages"`, `"level"=0 "msg"="done"`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("entries %q, want %q", got, want)
	}
}
