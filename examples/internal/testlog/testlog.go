// Package testlog collects the log lines of an example's processes, run
// concurrently inside a test, to show when the test fails.
package testlog

import (
	"bytes"
	"log"
	"sync"
)

// Buffer is a log destination safe for concurrent writers.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger logs into b with name as every line's prefix.
func (b *Buffer) Logger(name string) *log.Logger {
	return log.New(b, name+": ", log.Lmicroseconds|log.Lmsgprefix)
}
