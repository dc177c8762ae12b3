package servicetest

import (
	"bytes"
	"sync"
)

// Output collects what a command or process under test writes (its stdout,
// stderr or logs) while the test reads it: a bytes.Buffer safe for
// concurrent use.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
