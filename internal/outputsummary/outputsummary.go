// Package outputsummary keeps what a plugin wrote to its output (a launched
// plugin's stdout and stderr, a WASM guest's log) for failure reasons: the
// first and the last bytes of it, summarised on one line. The cause of a
// failure is often on the first lines (a missing file, a bad flag) and the
// last ones say how the plugin ended (a panic's stack, a last message).
package outputsummary

import (
	"io"
	"strings"
	"sync"
)

// DefaultSize is how much output a Buffer of size 0 keeps: the first
// half and the last half of it.
const DefaultSize = 8 << 10

// headLines and tailLines are how many lines of each end String keeps.
const (
	headLines = 3
	tailLines = 5
)

// Buffer keeps the first and the last bytes written to it, at most its
// size together, and optionally copies everything to another writer. It
// is safe for concurrent use.
type Buffer struct {
	mu      sync.Mutex
	head    []byte // the first size/2 bytes
	tail    []byte // the last size/2 bytes after head
	size    int
	dropped bool // bytes between head and tail were lost
	tee     io.Writer
}

// New returns a Buffer keeping size bytes (DefaultSize if size <= 0) that
// also copies what it is given to tee, if not nil (errors of tee are
// ignored: the summary must not fail because a copy did).
func New(size int, tee io.Writer) *Buffer {
	if size <= 0 {
		size = DefaultSize
	}
	return &Buffer{size: size, tee: tee}
}

// Write keeps what it can of p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rest := p
	if room := b.size/2 - len(b.head); room > 0 {
		n := min(room, len(rest))
		b.head = append(b.head, rest[:n]...)
		rest = rest[n:]
	}
	b.tail = append(b.tail, rest...)
	if over := len(b.tail) - b.size/2; over > 0 {
		b.tail = append(b.tail[:0], b.tail[over:]...)
		b.dropped = true
	}
	if b.tee != nil {
		_, _ = b.tee.Write(p)
	}
	return len(p), nil
}

// String returns the kept output on one line: its first lines, "..." for
// what was left out, and its last lines, joined by " | "; "" if nothing
// but blank lines was written.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.dropped {
		return joinLines(Lines(string(b.head) + string(b.tail)))
	}
	head := Lines(string(b.head))
	if len(head) > 1 && !strings.HasSuffix(string(b.head), "\n") {
		head = head[:len(head)-1] // cut inside a line
	}
	tail := Lines(string(b.tail))
	if len(tail) > 1 {
		tail = tail[1:] // the first is cut
	}
	return joinLines(append(append(head[:min(len(head), headLines)], "..."), tail[max(0, len(tail)-tailLines):]...))
}

// Lines splits s into its non-empty lines, each trimmed of surrounding
// white space.
func Lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// joinLines keeps the first headLines and last tailLines of ls, with "..."
// for the lines between, on one line.
func joinLines(ls []string) string {
	if len(ls) > headLines+tailLines+1 {
		ls = append(append(ls[:headLines:headLines], "..."), ls[len(ls)-tailLines:]...)
	}
	return strings.Join(ls, " | ")
}
