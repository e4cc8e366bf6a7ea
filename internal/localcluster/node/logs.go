package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/logs"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Container logs are stored in the CRI format the kubelet reads, one record
// per line: "<RFC3339Nano time> <stream> <F|P> <content>", where P marks a
// partial line continued by the next record. Times make --timestamps and
// --since work.
const (
	streamStdout = "stdout"
	streamStderr = "stderr"
	tagFull      = "F"
	tagPartial   = "P"
)

// Termination messages taken from the log end are at most this long, as the
// kubelet's FallbackToLogsOnError.
const (
	terminationMessageLines = 80
	terminationMessageBytes = 2048
)

// containerLog is the log of one run of a container, written by the node
// from the container's stdout and stderr.
type containerLog struct {
	clock clock.PassiveClock

	mu   sync.Mutex
	f    *os.File
	done bool
	// tail holds the last output, for termination messages.
	tail []byte
	// pending is each stream's line not ended yet: a line is recorded
	// once it ends, so lines of stdout and stderr never cut into each
	// other, as with containerd's CRI logger.
	pending map[string][]byte
}

// maxLineBytes is the longest line recorded whole: a longer one is recorded
// in partial records of this size (containerd's CRI logger's default).
const maxLineBytes = 16 << 10

func createContainerLog(path string, clk clock.PassiveClock) (*containerLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &containerLog{clock: clk, f: f, pending: map[string][]byte{}}, nil
}

// writer returns the io.Writer of one stream.
func (l *containerLog) writer(stream string) io.Writer {
	return logStream{log: l, stream: stream}
}

type logStream struct {
	log    *containerLog
	stream string
}

func (s logStream) Write(p []byte) (int, error) {
	if err := s.log.append(s.stream, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (l *containerLog) append(stream string, p []byte) error {
	ts := l.clock.Now().UTC().Format(time.RFC3339Nano)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return os.ErrClosed
	}
	l.tail = append(l.tail, p...)
	if over := len(l.tail) - terminationMessageBytes; over > 0 {
		l.tail = append([]byte(nil), l.tail[over:]...)
	}
	var b bytes.Buffer
	rest := append(l.pending[stream], p...)
	for {
		line, after, full := bytes.Cut(rest, []byte{'\n'})
		if !full {
			break
		}
		for len(line) > maxLineBytes {
			writeRecord(&b, ts, stream, tagPartial, line[:maxLineBytes])
			line = line[maxLineBytes:]
		}
		writeRecord(&b, ts, stream, tagFull, line)
		rest = after
	}
	for len(rest) >= maxLineBytes {
		writeRecord(&b, ts, stream, tagPartial, rest[:maxLineBytes])
		rest = rest[maxLineBytes:]
	}
	l.pending[stream] = append([]byte(nil), rest...)
	if b.Len() == 0 {
		return nil
	}
	_, err := l.f.Write(b.Bytes())
	return err
}

func writeRecord(b *bytes.Buffer, ts, stream, tag string, content []byte) {
	fmt.Fprintf(b, "%s %s %s ", ts, stream, tag)
	b.Write(content)
	b.WriteByte('\n')
}

// close ends the log: followers stop once they have read it all.
func (l *containerLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	// A last line without its end is recorded as it is, partial.
	ts := l.clock.Now().UTC().Format(time.RFC3339Nano)
	var b bytes.Buffer
	for _, stream := range []string{streamStdout, streamStderr} {
		if rest := l.pending[stream]; len(rest) > 0 {
			writeRecord(&b, ts, stream, tagPartial, rest)
		}
	}
	_, werr := l.f.Write(b.Bytes())
	l.done = true
	return errors.Join(werr, l.f.Close())
}

func (l *containerLog) isDone() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// terminationMessage is the end of the output, for FallbackToLogsOnError.
func (l *containerLog) terminationMessage() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(l.tail), "\n"), "\n")
	if len(lines) > terminationMessageLines {
		lines = lines[len(lines)-terminationMessageLines:]
	}
	return strings.Join(lines, "\n")
}

// failureMessage is the termination message of a container that failed,
// as the kubelet makes it: under FallbackToLogsOnError the end of its log
// (terminationMessage), under File the termination-log file's content,
// which the node does not keep (none).
func failureMessage(policy corev1.TerminationMessagePolicy, logEnd string) string {
	if policy == corev1.TerminationMessageFallbackToLogsOnError {
		return logEnd
	}
	return ""
}

// copyLog writes the log file at path to w as the options ask, with the
// kubelet's reader (tail, since, limit, timestamps, follow). live is the log
// while its run goes on (nil once it ended); with Follow, copyLog then waits
// for more until the run ends or ctx is done.
func copyLog(ctx context.Context, path string, live *containerLog, opts api.ContainerLogOpts, now time.Time, w io.Writer) error {
	// No logger: the records are the node's own, and what goes wrong is
	// returned (the library would log a record still being written).
	err := logs.ReadLogs(ctx, nil, path, "", logs.NewLogOptions(podLogOptions(opts), now), logRunState{live: live}, w, w)
	if ctx.Err() != nil {
		return nil // the client went away: nobody is left to tell
	}
	return err
}

// podLogOptions gives virtual-kubelet's options back their API form, where
// unset is nil: virtual-kubelet reads an absent tailLines, limitBytes or
// sinceSeconds as 0.
func podLogOptions(opts api.ContainerLogOpts) *corev1.PodLogOptions {
	o := &corev1.PodLogOptions{Follow: opts.Follow, Timestamps: opts.Timestamps, Previous: opts.Previous}
	if opts.Tail > 0 {
		o.TailLines = ptr.To(int64(opts.Tail))
	}
	if opts.LimitBytes > 0 {
		o.LimitBytes = ptr.To(int64(opts.LimitBytes))
	}
	if opts.SinceSeconds > 0 {
		o.SinceSeconds = ptr.To(int64(opts.SinceSeconds))
	}
	if !opts.SinceTime.IsZero() {
		o.SinceTime = &metav1.Time{Time: opts.SinceTime}
	}
	return o
}

// logRunState tells the log reader whether the run it follows goes on. The
// reader asks a CRI RuntimeService for the container's state; the node knows
// it from the log: a run's log is closed once the run ended and its output
// was written. Only ContainerStatus, the one method the reader calls, is
// implemented: any other call panics on the nil embedded interface.
type logRunState struct {
	internalapi.RuntimeService
	live *containerLog
}

func (s logRunState) ContainerStatus(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
	state := runtimeapi.ContainerState_CONTAINER_EXITED
	if s.live != nil && !s.live.isDone() {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{State: state}}, nil
}
