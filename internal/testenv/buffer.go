package testenv

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a test reads while the code under test
// writes to it from other goroutines (a logger, an access log).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
