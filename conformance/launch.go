package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nrikit/nrikit/internal/pluginproc"
	"github.com/nrikit/nrikit/internal/sockfile"
)

// outputKept is how much of a launched plugin's output is kept for
// failure reasons: the first half and the last half of it.
const outputKept = 8 << 10

// outputBuffer keeps the first and the last bytes a plugin wrote: the
// cause of a failure is often on the first lines (a missing file, a bad
// flag) and the last ones say how it ended (a panic's stack).
type outputBuffer struct {
	mu      sync.Mutex
	head    []byte // the first max/2 bytes
	tail    []byte // the last max/2 bytes after head
	max     int
	dropped bool // bytes between head and tail were lost
	tee     io.Writer
}

func newOutputBuffer(max int, tee io.Writer) *outputBuffer {
	return &outputBuffer{max: max, tee: tee}
}

// Write implements io.Writer.
func (b *outputBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rest := p
	if room := b.max/2 - len(b.head); room > 0 {
		n := min(room, len(rest))
		b.head = append(b.head, rest[:n]...)
		rest = rest[n:]
	}
	b.tail = append(b.tail, rest...)
	if over := len(b.tail) - b.max/2; over > 0 {
		b.tail = append(b.tail[:0], b.tail[over:]...)
		b.dropped = true
	}
	if b.tee != nil {
		_, _ = b.tee.Write(p)
	}
	return len(p), nil
}

// headLines and tailLines are how many lines of each end String keeps.
const (
	headLines = 3
	tailLines = 5
)

// String returns the kept output on one line: its first lines, a marker
// of what was left out, and its last lines, joined by " | ".
func (b *outputBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.dropped {
		return joinLines(lines(string(b.head) + string(b.tail)))
	}
	head := lines(string(b.head))
	if len(head) > 1 && !strings.HasSuffix(string(b.head), "\n") {
		head = head[:len(head)-1] // cut inside a line
	}
	tail := lines(string(b.tail))
	if len(tail) > 1 {
		tail = tail[1:] // the first is cut
	}
	return joinLines(append(append(head[:min(len(head), headLines)], "..."), tail[max(0, len(tail)-tailLines):]...))
}

// lines splits s into its non-empty lines.
func lines(s string) []string {
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

// process is a launched plugin, supervised by pluginproc.
type process struct {
	proc   *pluginproc.Process
	output *outputBuffer
	// exited is closed once the process exited and its output is read.
	exited <-chan struct{}
	err    error // Wait's result, valid once exited is closed
}

// launch starts command the way a runtime starts a pre-installed plugin:
// one end of a socket pair as file descriptor 3, NRI_PLUGIN_SOCKET=3 and
// the plugin's name and index in the environment, then env. It returns
// the process and the runtime's end of the socket.
func launch(command []string, idx, name string, env []string, tee io.Writer) (*process, net.Conn, error) {
	if len(command) == 0 || command[0] == "" {
		return nil, nil, errors.New("no plugin command given")
	}
	p := &process{output: newOutputBuffer(outputKept, tee)}
	proc, conn, err := pluginproc.Start(pluginproc.Spec{
		Path: command[0], Args: command[1:], Name: name, Idx: idx, EnvAfter: env,
		Output: p.output,
		// Set before exited is closed.
		OnExit: func(_ int, err error) { p.err = err },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("starting plugin %q: %w", command[0], err)
	}
	p.proc, p.exited = proc, proc.Done()
	return p, conn, nil
}

// hasExited reports whether the process has exited.
func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitDescription describes how the process ended, with its last output.
func (p *process) exitDescription() string {
	var b strings.Builder
	if p.err == nil {
		b.WriteString("exited with status 0")
	} else {
		b.WriteString(pluginproc.Status(p.err))
	}
	if out := p.output.String(); out != "" {
		fmt.Fprintf(&b, "; output: %s", out)
	}
	return b.String()
}

// waitExit waits up to d for the process to exit.
func (p *process) waitExit(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return p.hasExited()
	}
}

// kill kills the process if it still runs and waits for it.
func (p *process) kill() { p.proc.Kill() }

// acceptOne listens on the unix socket path and accepts one connection
// within d. The socket file is removed before listening (if stale) and
// after accepting.
func acceptOne(ctx context.Context, path string, d time.Duration) (net.Conn, error) {
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
		}
	}
	// Only this user can connect, from the moment the socket exists.
	ul, err := sockfile.Listen(path, nil)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	defer ul.Close()
	if err := ul.SetDeadline(time.Now().Add(d)); err != nil {
		return nil, fmt.Errorf("setting the accept deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = ul.SetDeadline(time.Now()) })
	defer stop()
	conn, err := ul.Accept()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for a plugin on %s: %w", path, ctx.Err())
		}
		return nil, fmt.Errorf("no plugin connected to %s within %s: %w", path, d, err)
	}
	return conn, nil
}
