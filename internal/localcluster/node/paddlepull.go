package node

// Paddle runtimes on first use. The local cluster installs no Paddle
// runtime up front: the image table lists the releases not installed yet
// as pending (PaddleRuntime.Pending), and the node installs one when a
// container first needs it, the way a kubelet pulls an image it does not
// have. The pod records what a kubelet records for a pull — Pulling, then
// Pulled with the time it took — and its container waits in
// ContainerCreating meanwhile. Pods needing the same release wait for one
// install (single-flight here; paddleruntime's lock file serialises
// installs across processes: other nodes, `make paddle-runtime`). A failed
// install keeps the container waiting with ErrImagePull and the reason,
// then ImagePullBackOff until the next attempt, 10s later, doubling up to
// 5 minutes, as the kubelet backs off pulls.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
)

// reasonImagePullBackOff keeps a container waiting between failed pulls.
const reasonImagePullBackOff = "ImagePullBackOff"

// Pull back-off, as the kubelet's image pulls.
const (
	pullBackoffInitial = 10 * time.Second
	pullBackoffMax     = 5 * time.Minute
)

// paddleInstaller installs a pinned release's runtime into cacheDir ("" for
// paddleruntime's default) and returns its table entry.
type paddleInstaller func(ctx context.Context, cacheDir, version string) (PaddleRuntime, error)

// imageSource is the node's image table, which installing a pending Paddle
// runtime replaces (ImageTable.withInstalledPaddle).
type imageSource struct {
	install paddleInstaller
	clock   clock.Clock
	mu      sync.Mutex
	table   *ImageTable
	// pulls are the installs in flight, or failed, by release.
	pulls map[string]*paddlePull
}

// paddlePull is one install of a release's runtime.
type paddlePull struct {
	done chan struct{}
	// err is set before done closes; failedAt and backoff then too, when
	// err is set.
	err      error
	failedAt time.Time
	backoff  time.Duration
}

func newImageSource(table *ImageTable, install paddleInstaller, clk clock.Clock) *imageSource {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &imageSource{table: table, install: install, clock: clk, pulls: map[string]*paddlePull{}}
}

// current is the table as it stands.
func (s *imageSource) current() *ImageTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table
}

// errPullBackOff is a release whose last install failed less than its
// back-off ago.
type errPullBackOff struct{ last error }

func (e *errPullBackOff) Error() string { return e.last.Error() }

// pull returns the install of release version: the one in flight, a new
// one, or one already done when the runtime is installed. It returns an
// *errPullBackOff while a failed install's back-off lasts.
func (s *imageSource) pull(version string) (p *paddlePull, started bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.table.paddle == nil || !s.table.paddle.Releases[version].Pending {
		done := make(chan struct{})
		close(done)
		return &paddlePull{done: done}, false, nil
	}
	backoff := time.Duration(0)
	if prev := s.pulls[version]; prev != nil {
		select {
		case <-prev.done:
		default:
			return prev, false, nil // in flight: wait for it
		}
		if s.clock.Since(prev.failedAt) < prev.backoff {
			return nil, false, &errPullBackOff{last: prev.err}
		}
		backoff = prev.backoff
	}
	if s.install == nil {
		return nil, false, fmt.Errorf("this node cannot install Paddle runtimes")
	}
	p = &paddlePull{done: make(chan struct{})}
	s.pulls[version] = p
	cacheDir := s.table.paddle.CacheDir
	go func() {
		// Not the pod's context: other pods may wait for this install, and
		// a half-done one is thrown away by the next.
		rt, err := s.install(context.Background(), cacheDir, version)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err == nil {
			var t *ImageTable
			if t, err = s.table.withInstalledPaddle(version, rt); err == nil {
				s.table = t
				delete(s.pulls, version)
			}
		}
		if err != nil {
			p.err, p.failedAt = err, s.clock.Now()
			p.backoff = min(max(2*backoff, pullBackoffInitial), pullBackoffMax)
		}
		close(p.done)
	}()
	return p, true, nil
}

// pullPaddle installs the pending runtime of release version that the
// container's image runs on, or waits for the install another container
// started, recording a kubelet's pull events on the pod. Its errors keep
// the container waiting: ErrImagePull when the install failed,
// ImagePullBackOff until the next attempt.
func (r *podRuntime) pullPaddle(c *containerRun, version string) error {
	image := c.spec.Image
	p, _, err := r.deps.images.pull(version)
	if bo := (*errPullBackOff)(nil); errors.As(err, &bo) {
		return &waitError{reason: reasonImagePullBackOff, err: fmt.Errorf("Back-off pulling image %q: installing the Paddle %s runtime it runs on failed: %w", image, version, bo.last)}
	}
	if err != nil {
		return &waitError{reason: reasonErrImagePull, err: fmt.Errorf("image %q: %w", image, err)}
	}
	select {
	case <-p.done: // installed meanwhile
		if p.err == nil {
			return nil
		}
	default:
	}
	start := r.deps.clock.Now()
	r.event(corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q: installing the Paddle %s runtime it runs on (once; about half a minute)", image, version))
	r.setState(c, waiting(reasonContainerCreating, fmt.Sprintf("installing the Paddle %s runtime image %q runs on", version, image)))
	select {
	case <-p.done:
	case <-r.ctx.Done():
		return &waitError{reason: reasonContainerCreating, err: r.ctx.Err()}
	}
	if p.err != nil {
		return &waitError{reason: reasonErrImagePull, err: fmt.Errorf("image %q: installing the Paddle %s runtime it runs on failed: %w", image, version, p.err)}
	}
	r.event(corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q in %s: the Paddle %s runtime is installed",
		image, r.deps.clock.Since(start).Round(100*time.Millisecond), version))
	return nil
}

// installPaddleRuntime is the node's paddleInstaller: paddleruntime's
// install of a pinned release, its progress logged.
func installPaddleRuntime(log logr.Logger) paddleInstaller {
	return func(ctx context.Context, cacheDir, version string) (PaddleRuntime, error) {
		w := &logWriter{log: log.WithValues("paddleRelease", version)}
		defer w.Flush()
		rt, err := paddleruntime.EnsureRelease(ctx, paddleruntime.Options{CacheDir: cacheDir, Log: w}, version)
		if err != nil {
			return PaddleRuntime{}, err
		}
		return InstalledPaddleRuntime(rt.BinDir, rt.ParameterServer, rt.HostPaths, standardPath), nil
	}
}

// logWriter logs each line written to it as one entry (a standard library
// logger's, an install's progress), a last unterminated one on Flush. Safe
// for concurrent use.
type logWriter struct {
	log     logr.Logger
	mu      sync.Mutex
	partial []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		line, rest, ok := bytes.Cut(w.partial, []byte{'\n'})
		if !ok {
			break
		}
		if text := strings.TrimSpace(string(line)); text != "" {
			w.log.Info(text)
		}
		w.partial = rest
	}
	return len(p), nil
}

// Flush logs what is left of an unterminated line.
func (w *logWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if text := strings.TrimSpace(string(w.partial)); text != "" {
		w.log.Info(text)
	}
	w.partial = nil
}
