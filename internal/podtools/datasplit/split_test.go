package datasplit

import (
	"bytes"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// stringSources are in-memory inputs.
func stringSources(contents ...string) []Source {
	var sources []Source
	for i, c := range contents {
		sources = append(sources, Source{
			Name: "input" + string(rune('0'+i)),
			Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(c)), nil },
		})
	}
	return sources
}

func TestSplit(t *testing.T) {
	seven := "l0\nl1\nl2\nl3\nl4\nl5\nl6\n"
	tests := []splitCase{
		{
			name: "round-robin deals line g to part g mod N", inputs: []string{seven}, parts: 3, mode: RoundRobin,
			want:      []string{"l0\nl3\nl6\n", "l1\nl4\n", "l2\nl5\n"},
			wantLines: []int64{3, 2, 2},
		},
		{
			name: "contiguous: the first parts take the remainder", inputs: []string{seven}, parts: 3, mode: Contiguous,
			want:      []string{"l0\nl1\nl2\n", "l3\nl4\n", "l5\nl6\n"},
			wantLines: []int64{3, 2, 2},
		},
		{
			name: "lines are counted across inputs in order", inputs: []string{"a0\na1\n", "b0\nb1\nb2\n"}, parts: 2, mode: RoundRobin,
			want:      []string{"a0\nb0\nb2\n", "a1\nb1\n"},
			wantLines: []int64{3, 2},
		},
		{
			name: "more parts than lines, round-robin", inputs: []string{"x\ny\n"}, parts: 4, mode: RoundRobin,
			want:      []string{"x\n", "y\n", "", ""},
			wantLines: []int64{1, 1, 0, 0},
		},
		{
			name: "more parts than lines, contiguous", inputs: []string{"x\ny\n"}, parts: 4, mode: Contiguous,
			want:      []string{"x\n", "y\n", "", ""},
			wantLines: []int64{1, 1, 0, 0},
		},
		{
			name: "empty lines are lines", inputs: []string{"a\n\n\nb\n"}, parts: 2, mode: RoundRobin,
			want:      []string{"a\n\n", "\nb\n"},
			wantLines: []int64{2, 2},
		},
		{
			name: "a last line without newline gets one, so inputs do not run together", inputs: []string{"a\nb", "c"}, parts: 1, mode: Contiguous,
			want:      []string{"a\nb\nc\n"},
			wantLines: []int64{3},
		},
		{
			name: "carriage returns are kept", inputs: []string{"a\r\nb\r\n"}, parts: 2, mode: RoundRobin,
			want:      []string{"a\r\n", "b\r\n"},
			wantLines: []int64{1, 1},
		},
		{
			name: "no input lines", inputs: []string{""}, parts: 2, mode: Contiguous,
			want:      []string{"", ""},
			wantLines: []int64{0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// splitCase is inputs split into parts in a mode, and the parts and line
// counts wanted.
type splitCase struct {
	name      string
	inputs    []string
	parts     int
	mode      Mode
	want      []string
	wantLines []int64
}

// check splits the inputs into in-memory parts and checks each part's
// text, its line count, and that its byte count is what was written.
func (tt splitCase) check(t *testing.T) {
	t.Helper()
	bufs := make([]*bytes.Buffer, tt.parts)
	writers := make([]io.Writer, tt.parts)
	for i := range bufs {
		bufs[i] = &bytes.Buffer{}
		writers[i] = bufs[i]
	}
	stats, err := split(stringSources(tt.inputs...), tt.mode, DefaultMaxLineBytes, writers)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var lines []int64
	for i, b := range bufs {
		got = append(got, b.String())
		lines = append(lines, stats[i].Lines)
		if stats[i].Bytes != int64(b.Len()) {
			t.Errorf("part %d: %d bytes counted, %d written", i, stats[i].Bytes, b.Len())
		}
	}
	if !reflect.DeepEqual(got, tt.want) {
		t.Errorf("parts = %q, want %q", got, tt.want)
	}
	if !reflect.DeepEqual(lines, tt.wantLines) {
		t.Errorf("line counts = %v, want %v", lines, tt.wantLines)
	}
}

func TestSplitLineLimit(t *testing.T) {
	long := strings.Repeat("x", 2000)
	_, err := split(stringSources("ok\n", "short\n"+long+"\n"), RoundRobin, 1024, []io.Writer{io.Discard})
	if want := "input1: line 2 is longer than 1024 bytes"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("split() error = %v, want one containing %q", err, want)
	}
	// Lines far beyond bufio's default 64 KiB are fine under the default limit.
	var out bytes.Buffer
	huge := strings.Repeat("y", 3<<20) + "\n"
	if _, err := split(stringSources(huge), RoundRobin, DefaultMaxLineBytes, []io.Writer{&out}); err != nil || out.String() != huge {
		t.Errorf("a 3 MiB line: error %v, %d bytes out", err, out.Len())
	}
}

// repeatReader repeats one line forever without allocating.
type repeatReader struct {
	line []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}

// countingWriter counts bytes and keeps none.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// 50 MB generated on the fly go through with a few MB of allocation in all:
// nothing buffers whole inputs or allocates per line.
func TestSplitStreamsWithBoundedMemory(t *testing.T) {
	const size = 50 << 20
	line := append(bytes.Repeat([]byte("7,"), 31), "9\n"...) // 64 bytes
	source := Source{Name: "generated", Open: func() (io.ReadCloser, error) {
		return io.NopCloser(io.LimitReader(&repeatReader{line: line}, size)), nil
	}}
	for _, mode := range []Mode{RoundRobin, Contiguous} {
		t.Run(string(mode), func(t *testing.T) {
			parts := make([]*countingWriter, 4)
			writers := make([]io.Writer, len(parts))
			for i := range parts {
				parts[i] = &countingWriter{}
				writers[i] = parts[i]
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			stats, err := split([]Source{source}, mode, DefaultMaxLineBytes, writers)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for i, s := range stats {
				total += s.Bytes
				if s.Lines != size/64/4 {
					t.Errorf("part %d: %d lines, want %d", i, s.Lines, size/64/4)
				}
			}
			if total != size {
				t.Errorf("%d bytes split, want %d", total, size)
			}
			const limit = 4 << 20
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("splitting 50 MB allocated %d bytes", allocated)
			if allocated > limit {
				t.Errorf("splitting 50 MB allocated %d bytes, want at most %d", allocated, limit)
			}
		})
	}
}
