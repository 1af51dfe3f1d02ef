package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/nrikit/nrikit/internal/pluginproc"
	"github.com/nrikit/nrikit/internal/sockfile"
)

// process is a launched plugin, supervised by pluginproc.
type process struct {
	proc *pluginproc.Process
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
	if tee == nil {
		tee = io.Discard // read the output all the same, for failure reasons
	}
	p := &process{}
	proc, conn, err := pluginproc.Start(pluginproc.Spec{
		Path: command[0], Args: command[1:], Name: name, Idx: idx, EnvAfter: env,
		Output: tee,
		// Set before exited is closed.
		OnExit: func(_ int, err error) { p.err = err },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("starting the plugin: %w", err)
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
func (p *process) exitDescription() string { return p.proc.Describe() }

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
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("no plugin connected to %s within %s", path, d)
		}
		return nil, fmt.Errorf("waiting for a plugin on %s: %w", path, err)
	}
	return conn, nil
}
