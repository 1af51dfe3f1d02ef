package testbin

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/pluginproc"
)

// Proc is a plugin process a test started, supervised by pluginproc.
type Proc struct {
	p   *pluginproc.Process
	out *SyncBuffer
}

// SyncBuffer is a bytes.Buffer that a process's output can be written to
// while a test reads it.
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

// Start runs bin with args, an external plugin (it connects to a
// runtime's socket itself). At the end of the test the process gets
// SIGTERM, then SIGKILL if it has not exited within 5s; its output is
// logged if the test failed.
func Start(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{out: &SyncBuffer{}}
	proc, _, err := pluginproc.Start(pluginproc.Spec{Path: bin, Args: args, External: true,
		Env: []string{NoRaceExitDelay}, Output: p.out})
	if err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	p.p = proc
	t.Cleanup(func() {
		proc.Stop(0, 5*time.Second)
		if t.Failed() {
			t.Logf("output of %s:\n%s", bin, p.Output())
		}
	})
	return p
}

// Wait waits up to d for the process to exit and reports whether it did.
func (p *Proc) Wait(d time.Duration) bool {
	if !p.p.WaitExit(d, nil) {
		return false
	}
	<-p.p.Done() // its output is read (bounded by pluginproc's output grace)
	return true
}

// Err is the result of the process's Wait; valid after Wait reported true.
func (p *Proc) Err() error { return p.p.Err() }

// Output returns what the process wrote to stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }
