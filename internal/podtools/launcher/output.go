package launcher

import (
	"bytes"
	"io"
	"sync"
)

// syncWriter serialises writes to a destination several streams share.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// maxPendingLine bounds how much of an unterminated line is held back before
// it is written out anyway, so a process printing no newline cannot grow
// memory.
const maxPendingLine = 64 << 10

// prefixWriter writes whole lines, each behind a prefix, so that the lines of
// the pserver and the trainer interleave on one terminal without mixing.
type prefixWriter struct {
	dst     *syncWriter
	prefix  []byte
	pending []byte
}

func newPrefixWriter(dst *syncWriter, prefix string) *prefixWriter {
	return &prefixWriter{dst: dst, prefix: []byte(prefix)}
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	done := 0
	for {
		i := bytes.IndexByte(w.pending[done:], '\n')
		if i < 0 {
			break
		}
		if err := w.emit(w.pending[done : done+i+1]); err != nil {
			return 0, err
		}
		done += i + 1
	}
	w.pending = w.pending[:copy(w.pending, w.pending[done:])]
	if len(w.pending) >= maxPendingLine {
		if err := w.Flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes an unterminated last line, ending it with a newline.
func (w *prefixWriter) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	err := w.emit(append(w.pending, '\n'))
	w.pending = w.pending[:0]
	return err
}

func (w *prefixWriter) emit(line []byte) error {
	buf := make([]byte, 0, len(w.prefix)+len(line))
	buf = append(append(buf, w.prefix...), line...)
	_, err := w.dst.Write(buf)
	return err
}
