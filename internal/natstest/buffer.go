package natstest

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that a process under test (its logger, its
// goroutines) writes while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns what was written so far, a line each, without the
// surrounding space.
func (s *SyncBuffer) Lines() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Split(bytes.TrimSpace(s.b.Bytes()), []byte("\n"))
}
