package testutil

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer a test may read while another goroutine
// writes to it (a log being copied, a command's progress).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
