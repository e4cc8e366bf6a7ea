package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/termprogress"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// `run` follows its job to the end: the progress, and with --follow the
// chosen pods' logs. The job's end ends it, whatever the pods are doing: a
// followed log may never end by itself (a pod that never started, or was
// deleted before its log could be read, is waited for until it starts), so
// once the job has finished the logs get a bounded moment to deliver what
// they still hold, and the streams still open are then stopped.

// logDrainGrace is how long a finished job's followed logs may still take
// to end by themselves: the containers have exited, and what their logs
// hold arrives within moments.
const logDrainGrace = 5 * time.Second

// follower follows one job. stream copies a pod's log to the output until
// it ends or ctx is done; drainAfter starts the grace the logs get once the
// job has finished. A unit test fakes both.
type follower struct {
	c          *client.Client
	stream     func(ctx context.Context, ns, pod, prefix string)
	drainAfter func() <-chan time.Time
}

// follow shows the job's progress until it finishes, streaming the chosen
// pods' logs meanwhile.
func follow(ctx context.Context, c *client.Client, f *runFlags, ns, name string, out, errOut io.Writer) error {
	fl := follower{
		c: c,
		stream: func(ctx context.Context, ns, pod, prefix string) {
			_ = c.StreamLogs(ctx, ns, []client.PodLog{{Pod: pod, Prefix: prefix}}, out, client.StreamOptions{Follow: true})
		},
		drainAfter: func() <-chan time.Time { return time.After(logDrainGrace) },
	}
	return fl.run(ctx, f, ns, name, errOut)
}

func (fl follower) run(ctx context.Context, f *runFlags, ns, name string, errOut io.Writer) error {
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	// Logs and an in-place display would overwrite each other.
	tty := len(f.follow) == 0 && isTerminal(errOut)
	r := termprogress.NewRenderer(errOut, tty)
	start := time.Now()
	logs := newLogStreams(ctx)
	// Whatever ends the watch, no stream outlives the command.
	defer logs.drain(closedTime)
	var final *paddlev1.PaddleJob

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var mu sync.Mutex // the last snapshot, redrawn by the ticker
	var last client.Snapshot
	if tty {
		go func() {
			ticker := time.NewTicker(time.Second) // keeps the elapsed time moving on a terminal
			defer ticker.Stop()
			for {
				select {
				case <-watchCtx.Done():
					return
				case <-ticker.C:
					mu.Lock()
					r.Render(last, time.Since(start))
					mu.Unlock()
				}
			}
		}()
	}
	err := fl.c.Watch(watchCtx, ns, name, func(s client.Snapshot) (bool, error) {
		mu.Lock()
		last = s
		r.Render(s, time.Since(start))
		mu.Unlock()
		for _, p := range s.Pods {
			if followed(f.follow, name, &p) {
				prefix := "[" + strings.TrimPrefix(p.Name, name+"-") + "] "
				logs.start(p.Name, func(ctx context.Context) { fl.stream(ctx, ns, p.Name, prefix) })
			}
		}
		if s.Job != nil && s.Job.Status.IsFinished() {
			final = s.Job
			return true, nil
		}
		if s.Job == nil && time.Since(start) > 10*time.Second {
			return false, fmt.Errorf("PaddleJob %s/%s was deleted", ns, name)
		}
		return false, nil
	})
	stopWatch()
	if final != nil {
		logs.drain(fl.drainAfter())
		return finished(final, errOut, time.Since(start))
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return exitError{code: 2, msg: fmt.Sprintf("timed out after %s; PaddleJob %s/%s keeps running", f.timeout, ns, name)}
	case errors.Is(err, context.Canceled):
		return exitError{code: 130, msg: fmt.Sprintf("stopped watching; PaddleJob %s/%s keeps running", ns, name)}
	}
	return err
}

// closedTime is a grace that is over: drain stops the streams at once.
var closedTime = func() <-chan time.Time {
	ch := make(chan time.Time)
	close(ch)
	return ch
}()

// logStreams are the log streams of one run, one per pod.
type logStreams struct {
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	started map[string]bool
}

func newLogStreams(ctx context.Context) *logStreams {
	ctx, stop := context.WithCancel(ctx)
	return &logStreams{ctx: ctx, stop: stop, started: map[string]bool{}}
}

// start runs stream for pod, once per pod.
func (l *logStreams) start(pod string, stream func(ctx context.Context)) {
	if l.started[pod] {
		return
	}
	l.started[pod] = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		stream(l.ctx)
	}()
}

// drain waits until every stream has ended by itself or grace fires,
// then stops the streams still open and waits until they have returned:
// nothing is written once it returns.
func (l *logStreams) drain(grace <-chan time.Time) {
	ended := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-grace:
	}
	l.stop()
	<-ended
}

// finished reports the end of the job and its exit code.
func finished(job *paddlev1.PaddleJob, w io.Writer, took time.Duration) error {
	if job.Status.Phase == paddlev1.PaddleJobCompleted {
		fmt.Fprintf(w, "PaddleJob %s/%s completed in %s\n", job.Namespace, job.Name, took.Round(time.Second))
		return nil
	}
	return exitError{code: 1, msg: fmt.Sprintf("PaddleJob %s/%s failed: %s", job.Namespace, job.Name,
		strings.TrimPrefix(client.FailureMessage(job), client.ErrJobFailed.Error()+": "))}
}

// followed reports whether a pod's log was asked for: "all", a role
// ("worker"), or a pod by its short name ("worker-0") or full name.
func followed(selectors []string, job string, p *corev1.Pod) bool {
	short := strings.TrimPrefix(p.Name, job+"-")
	for _, s := range selectors {
		if s == "all" || s == p.Name || s == short || s == p.Labels[paddlev1.LabelReplicaType] {
			return true
		}
	}
	return false
}
