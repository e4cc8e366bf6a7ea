package node

import (
	"bufio"
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
	"k8s.io/utils/clock"
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
	grew  broadcaster

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
	l.grew.notify()
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
	l.grew.notify()
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

// logRecord is one parsed log line.
type logRecord struct {
	Time    time.Time
	Stream  string
	Partial bool
	Content []byte
}

func parseLogRecord(line []byte) (logRecord, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	parts := bytes.SplitN(line, []byte{' '}, 4)
	if len(parts) < 3 {
		return logRecord{}, fmt.Errorf("malformed log record %q", line)
	}
	t, err := time.Parse(time.RFC3339Nano, string(parts[0]))
	if err != nil {
		return logRecord{}, fmt.Errorf("malformed log time: %w", err)
	}
	r := logRecord{Time: t, Stream: string(parts[1]), Partial: string(parts[2]) == tagPartial}
	if len(parts) == 4 {
		r.Content = parts[3]
	}
	return r, nil
}

// errLogLimit ends a read at --limit-bytes.
var errLogLimit = errors.New("log byte limit reached")

// logFormatter writes records as kubectl logs shows them.
type logFormatter struct {
	w     io.Writer
	opts  api.ContainerLogOpts
	since time.Time
	sent  int
}

func newLogFormatter(w io.Writer, opts api.ContainerLogOpts, now time.Time) *logFormatter {
	f := &logFormatter{w: w, opts: opts, since: opts.SinceTime}
	if opts.SinceSeconds > 0 {
		f.since = now.Add(-time.Duration(opts.SinceSeconds) * time.Second)
	}
	return f
}

func (f *logFormatter) write(r logRecord) error {
	if !f.since.IsZero() && r.Time.Before(f.since) {
		return nil
	}
	var b bytes.Buffer
	if f.opts.Timestamps {
		b.WriteString(r.Time.Format(time.RFC3339Nano))
		b.WriteByte(' ')
	}
	b.Write(r.Content)
	if !r.Partial {
		b.WriteByte('\n')
	}
	out := b.Bytes()
	if f.opts.LimitBytes > 0 && f.sent+len(out) > f.opts.LimitBytes {
		out = out[:f.opts.LimitBytes-f.sent]
		if _, err := f.w.Write(out); err != nil {
			return err
		}
		return errLogLimit
	}
	f.sent += len(out)
	_, err := f.w.Write(out)
	return err
}

// copyLog writes the log file at path to w as the options ask. live is the
// log while its run goes on (nil once it ended); with Follow, copyLog then
// waits for more until the run ends or ctx is done.
func copyLog(ctx context.Context, path string, live *containerLog, opts api.ContainerLogOpts, now time.Time, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if opts.Tail > 0 {
		off, err := tailOffset(f, opts.Tail)
		if err != nil {
			return err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return err
		}
	}
	out := newLogFormatter(w, opts, now)
	br := bufio.NewReader(f)
	var pending []byte
	readAvailable := func() error {
		for {
			chunk, err := br.ReadBytes('\n')
			pending = append(pending, chunk...)
			if err == io.EOF {
				return nil // an incomplete record waits for the rest
			}
			if err != nil {
				return err
			}
			r, perr := parseLogRecord(pending)
			pending = pending[:0]
			if perr != nil {
				continue
			}
			if err := out.write(r); err != nil {
				return err
			}
		}
	}
	for {
		var grew <-chan struct{}
		ended := live == nil || !opts.Follow
		if !ended {
			// Taken before reading, so data written meanwhile wakes us.
			grew = live.grew.changed()
			ended = live.isDone()
		}
		if err := readAvailable(); err != nil {
			if errors.Is(err, errLogLimit) {
				return nil
			}
			return err
		}
		if ended {
			return nil
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return nil
		}
	}
}

// tailOffset returns where the last n records of f begin.
func tailOffset(f *os.File, n int) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	const chunk = 32 << 10
	buf := make([]byte, chunk)
	end := st.Size()
	seen := 0
	// The final newline ends the last record rather than starting one.
	skipLast := true
	for end > 0 {
		start := max(end-chunk, 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				skipLast = false
				continue
			}
			if skipLast {
				skipLast = false
				continue
			}
			seen++
			if seen == n {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
