package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/socketpair"
)

// outputTailSize is how much of a launched plugin's output is kept for
// failure reasons.
const outputTailSize = 4096

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	tee  io.Writer
	lost bool
}

func newTailBuffer(max int, tee io.Writer) *tailBuffer {
	return &tailBuffer{max: max, tee: tee}
}

// Write implements io.Writer.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		t.lost = true
	}
	if t.tee != nil {
		_, _ = t.tee.Write(p)
	}
	return len(p), nil
}

// String returns the kept output, its last lines, one line.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	dropped := t.lost
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
		dropped = true
	}
	s = strings.Join(lines, " | ")
	if dropped {
		s = "... " + s
	}
	return s
}

// process is a launched plugin.
type process struct {
	cmd    *exec.Cmd
	output *tailBuffer
	exited chan struct{}
	err    error // Wait's result, valid once exited is closed
}

// launch starts command the way a runtime starts a pre-installed plugin:
// one end of a socket pair as file descriptor 3, NRI_PLUGIN_SOCKET=3 and
// the plugin's name and index in the environment. It returns the process
// and the runtime's end of the socket.
func launch(command []string, idx, name string, env []string, tee io.Writer) (*process, net.Conn, error) {
	if len(command) == 0 || command[0] == "" {
		return nil, nil, errors.New("no plugin command given")
	}
	pair, err := socketpair.New()
	if err != nil {
		return nil, nil, fmt.Errorf("creating the socket pair: %w", err)
	}
	defer pair.Close()
	p := &process{output: newTailBuffer(outputTailSize, tee), exited: make(chan struct{})}
	p.cmd = exec.Command(command[0], command[1:]...)
	p.cmd.ExtraFiles = []*os.File{pair.PeerFile()}
	p.cmd.Env = append(os.Environ(),
		api.PluginNameEnvVar+"="+name,
		api.PluginIdxEnvVar+"="+idx,
		api.PluginSocketEnvVar+"=3",
	)
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout = p.output
	p.cmd.Stderr = p.output
	// Children of the plugin that keep its output open must not hold up
	// Wait forever.
	p.cmd.WaitDelay = 2 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting plugin %q: %w", command[0], err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	if err := pair.ClosePeer(); err != nil {
		p.kill()
		return nil, nil, fmt.Errorf("closing the plugin's end of the socket pair: %w", err)
	}
	conn, err := pair.LocalConn()
	if err != nil {
		p.kill()
		return nil, nil, fmt.Errorf("wrapping the runtime's end of the socket pair: %w", err)
	}
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
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		b.WriteString("exited with status 0")
	case errors.As(p.err, &ee):
		b.WriteString(ee.ProcessState.String())
	default:
		b.WriteString(p.err.Error())
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
func (p *process) kill() {
	if !p.hasExited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}

// acceptOne listens on the unix socket path and accepts one connection
// within d. The socket file is removed before listening (if stale) and
// after accepting.
func acceptOne(ctx context.Context, path string, d time.Duration) (net.Conn, error) {
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(true)
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
