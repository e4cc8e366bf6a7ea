package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LogOptions select what Logs returns.
type LogOptions struct {
	// Container defaults to the pod's first container.
	Container  string
	Follow     bool
	Previous   bool
	Timestamps bool
	// TailLines, when positive, returns only the last lines.
	TailLines int64
	// Since, when positive, returns only lines newer than that; SinceTime,
	// when set, only lines from then on.
	Since     time.Duration
	SinceTime time.Time
}

// podLogOptions are the API's options for opts.
func (opts LogOptions) podLogOptions() *corev1.PodLogOptions {
	o := &corev1.PodLogOptions{Container: opts.Container, Follow: opts.Follow, Previous: opts.Previous, Timestamps: opts.Timestamps}
	if opts.TailLines > 0 {
		o.TailLines = &opts.TailLines
	}
	if opts.Since > 0 {
		// The API takes whole seconds; round up, never losing a line asked for.
		secs := int64((opts.Since + time.Second - 1) / time.Second)
		o.SinceSeconds = &secs
	}
	if !opts.SinceTime.IsZero() {
		t := metav1.NewTime(opts.SinceTime)
		o.SinceTime = &t
	}
	return o
}

// Logs streams a pod's container log.
func (c *Client) Logs(ctx context.Context, namespace, pod string, opts LogOptions) (io.ReadCloser, error) {
	o := opts.podLogOptions()
	r, err := c.cs.CoreV1().Pods(namespace).GetLogs(pod, o).Stream(ctx)
	if err != nil && opts.Previous && apierrors.IsBadRequest(err) && strings.Contains(err.Error(), "previous terminated container") {
		return nil, fmt.Errorf("pod %s/%s: its container has not restarted, so there is no previous run's log (read the current one without --previous): %w", namespace, pod, err)
	}
	if err != nil {
		return nil, fmt.Errorf("logs of pod %s/%s: %w", namespace, pod, err)
	}
	return r, nil
}

// PodLog names a pod whose log to stream, and the prefix of its lines.
type PodLog struct {
	Pod, Container, Prefix string
}

// StreamOptions say how StreamLogs reads each log.
type StreamOptions struct {
	// Follow waits for each container to start and follows its log until
	// it ends or ctx is done.
	Follow bool
	// TailLines, when positive, starts from the last lines.
	TailLines int64
	// Previous reads the log of each container's previous run, Timestamps
	// prefixes each line with its time, Since and SinceTime skip older
	// lines (see LogOptions).
	Previous, Timestamps bool
	Since                time.Duration
	SinceTime            time.Time
}

// StreamLogs copies the logs of pods to w line by line, each line prefixed,
// lines of different pods never interleaved mid-line.
func (c *Client) StreamLogs(ctx context.Context, namespace string, pods []PodLog, w io.Writer, opts StreamOptions) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.streamOne(ctx, namespace, p, opts, func(line string) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(w, "%s%s\n", p.Prefix, line)
			})
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil // the caller stopped following
	}
	return errors.Join(errs...)
}

func (c *Client) streamOne(ctx context.Context, namespace string, p PodLog, opts StreamOptions, emit func(string)) error {
	var r io.ReadCloser
	for {
		var err error
		r, err = c.Logs(ctx, namespace, p.Pod, LogOptions{Container: p.Container, Follow: opts.Follow, TailLines: opts.TailLines,
			Previous: opts.Previous, Timestamps: opts.Timestamps, Since: opts.Since, SinceTime: opts.SinceTime})
		if err == nil {
			break
		}
		// Not started yet: a follower waits for it, a one-shot read reports it.
		if !opts.Follow || !notStartedYet(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		emit(sc.Text())
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading the log of pod %s: %w", p.Pod, err)
	}
	return nil
}

// notStartedYet reports whether a log request failed because the container
// has not started (or the pod not been scheduled) yet.
func notStartedYet(err error) bool {
	if apierrors.IsBadRequest(err) || apierrors.IsNotFound(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "waiting to start") || strings.Contains(msg, "ContainerCreating") || strings.Contains(msg, "PodInitializing")
}
