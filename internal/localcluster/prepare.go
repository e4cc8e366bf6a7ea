package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/runtimenode"
)

// What a cluster needs before anything starts: the control-plane binaries,
// CoreDNS and the add-ons asked for, each built once into the cache, and
// the Paddle runtimes looked up (the node installs a missing one when a pod
// first needs it: node/paddlepull.go). The control plane's builds run
// beside CoreDNS's and the add-ons': a build that downloads modules then
// overlaps one that compiles. Each says how long it took, or that it was
// cached, in lines that never mix (lineWriter).

// prepared is what the cluster's start found or built.
type prepared struct {
	bins       string
	paddle     *node.PaddleRuntimes
	addons     map[string]string
	clusterDNS string
	// nodeRuntime and nodeImages are the container-runtime node's
	// binaries and images (--node-runtime=containerd).
	nodeRuntime kubebin.NodeRuntime
	nodeImages  []string
}

// prepare builds (once) or finds what the cluster runs.
func prepare(ctx context.Context, opts Options) (*prepared, error) {
	out := &syncWriter{w: opts.Out}
	var p prepared
	var err error
	if p.paddle, err = lookupPaddleRuntimes(ctx, opts.PaddleRuntime, kubebin.DefaultCacheDir(), out.prefixed("  ")); err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return timed(out, "control-plane binaries", func(log io.Writer) (err error) {
			p.bins, err = kubebin.Ensure(gctx, kubebin.Options{Dirs: opts.BinaryDirs, Log: log}, kubebin.AllComponents...)
			return err
		})
	})
	g.Go(func() error {
		err := timed(out, "CoreDNS", func(log io.Writer) (err error) {
			p.clusterDNS, err = kubebin.EnsureClusterDNS(gctx, kubebin.Options{Dirs: opts.BinaryDirs, Log: log})
			return err
		})
		if err != nil {
			return err
		}
		p.addons = map[string]string{}
		for _, name := range opts.With {
			err := timed(out, "add-on "+name, func(log io.Writer) error {
				dir, err := kubebin.EnsureAddon(gctx, kubebin.Options{Log: log}, name)
				p.addons[name] = dir
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if opts.NodeRuntime == NodeRuntimeContainerd {
		g.Go(func() error {
			return timed(out, "container-runtime node", func(log io.Writer) (err error) {
				if p.nodeRuntime, err = kubebin.EnsureNodeRuntime(gctx, kubebin.Options{Log: log}); err != nil {
					return err
				}
				p.nodeImages, err = runtimenode.BuildImages(gctx, kubebin.DefaultCacheDir(), p.nodeRuntime, log)
				return err
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &p, nil
}

// timed runs a step that builds what is missing, its progress to log, and
// says how long it took, or that it built nothing.
func timed(out *syncWriter, what string, fn func(log io.Writer) error) error {
	log := out.prefixed("  ")
	start := time.Now()
	said := &wroteAny{w: log}
	err := fn(said)
	log.Flush()
	switch {
	case err != nil:
		fmt.Fprintf(log, "%s: failed after %s\n", what, time.Since(start).Round(time.Second))
	case said.any:
		fmt.Fprintf(log, "%s: ready in %s\n", what, time.Since(start).Round(time.Second))
	default:
		fmt.Fprintf(log, "%s: cached\n", what)
	}
	log.Flush()
	return err
}

// wroteAny records whether anything was written through it.
type wroteAny struct {
	w   io.Writer
	mu  sync.Mutex
	any bool
}

func (w *wroteAny) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.any = w.any || len(b) > 0
	w.mu.Unlock()
	return w.w.Write(b)
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// prefixed is a writer of whole lines to s, each behind prefix: the lines
// of steps running side by side never mix.
func (s *syncWriter) prefixed(prefix string) *lineWriter {
	return &lineWriter{dst: s, prefix: prefix}
}

// lineWriter writes whole lines to dst, each behind a prefix; it is safe
// for concurrent use (a step's progress ticker writes beside the step).
type lineWriter struct {
	dst     io.Writer
	prefix  string
	mu      sync.Mutex
	pending []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, b...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			break
		}
		if _, err := w.dst.Write(append([]byte(w.prefix), w.pending[:i+1]...)); err != nil {
			return 0, err
		}
		w.pending = w.pending[i+1:]
	}
	return len(b), nil
}

// Flush writes an unterminated last line, ending it.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 {
		_, _ = w.dst.Write(append(append([]byte(w.prefix), w.pending...), '\n'))
		w.pending = nil
	}
}
