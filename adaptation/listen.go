package adaptation

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nrikit/nrikit/identity"
	"github.com/nrikit/nrikit/internal/sockfile"
)

// listen sets up the socket for external plugins and starts accepting
// connections: the socket's directory is created (mode 0700) if absent,
// else checked (owned by this process's user, not writable by others), a
// stale socket is removed (a live one, with a runtime answering, is an
// error), and the socket appears at its path with mode 0600, never
// reachable by other users (see sockfile).
func (a *Adaptation) listen() (err error) {
	path := a.cfg.socketPath
	if err := sockfile.CheckPath(path); err != nil {
		return fmt.Errorf("adaptation: %w", err)
	}
	dir := filepath.Dir(path)
	created, err := mkdirs(dir)
	if err != nil {
		return fmt.Errorf("adaptation: creating socket directory: %w", err)
	}
	defer func() {
		if err != nil {
			removeDirs(created)
		}
	}()
	if err := sockfile.CheckDir(dir); err != nil {
		return fmt.Errorf("adaptation: %w", err)
	}
	if info, err := os.Lstat(path); err == nil {
		if info.Mode()&fs.ModeSocket == 0 {
			return fmt.Errorf("adaptation: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return fmt.Errorf("adaptation: socket %s is in use by another runtime", path)
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("adaptation: removing stale socket: %w", err)
		}
		a.log.Info("removed stale socket", "path", path)
	}
	l, err := sockfile.Listen(path, a.cfg.afterBind)
	if err != nil {
		return fmt.Errorf("adaptation: listening for plugins: %w", err)
	}
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		l.Close()
		return ErrStopped
	}
	a.listener = l
	a.mu.Unlock()
	a.log.Info("listening for external plugins", "socket", path)
	a.goOwned(func() { a.accept(l) })
	return nil
}

// mkdirs creates dir and the directories above it that do not exist
// (mode 0700), and returns those it created, deepest first; on an error
// it removes them again.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			break
		}
		missing = append(missing, d)
	}
	if len(missing) == 0 {
		return nil, nil
	}
	err := os.MkdirAll(dir, 0o700)
	var created []string
	for _, d := range missing {
		if _, serr := os.Stat(d); serr == nil {
			created = append(created, d)
		}
	}
	if err != nil {
		removeDirs(created)
		return nil, err
	}
	return created, nil
}

// removeDirs removes the directories dirs, deepest first, that are empty:
// those mkdirs created for a socket that could not be set up.
func removeDirs(dirs []string) {
	for _, d := range dirs {
		_ = os.Remove(d) // not empty: something else uses it
	}
}

// accept serves the listener until it is closed.
func (a *Adaptation) accept(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || a.ctx.Err() != nil {
				return
			}
			a.log.Warn("accepting plugin connection", "error", err)
			if !a.sleep(100 * time.Millisecond) {
				return
			}
			continue
		}
		a.goOwned(func() {
			if err := a.ServeConn(a.ctx, conn); err != nil {
				a.connLog.Debug("external plugin not registered", "error", err)
			}
		})
	}
}

// admitConnLocked counts a new external connection as not registered
// yet, or refuses it, with the log line to write about it: when
// [WithMaxPendingConnections] connections have not registered, or
// [WithMaxPendingConnectionsPerPeer] of its peer process (peer, if known)
// have not. The caller holds a.mu.
func (a *Adaptation) admitConnLocked(peer *identity.Peer) *refusal {
	if a.unregistered >= a.cfg.limits.MaxPendingConnections {
		return &refusal{
			msg:  "refusing plugin connection: too many connections have not registered yet",
			args: []any{"limit", a.cfg.limits.MaxPendingConnections},
			err: fmt.Errorf("adaptation: refusing plugin connection: %d connections have not registered yet (limit)",
				a.cfg.limits.MaxPendingConnections),
		}
	}
	if peer != nil {
		if n := a.pendingByPeer[peer.PID]; n >= a.cfg.limits.MaxPendingConnectionsPerPeer {
			return &refusal{
				msg:  "refusing plugin connection: too many connections of its process have not registered yet",
				args: []any{"limit", a.cfg.limits.MaxPendingConnectionsPerPeer, "pid", peer.PID, "uid", peer.UID},
				err: fmt.Errorf("adaptation: refusing plugin connection from pid %d (uid %d): %d of its connections have not registered yet (limit)",
					peer.PID, peer.UID, n),
			}
		}
		if a.pendingByPeer == nil {
			a.pendingByPeer = map[int]int{}
		}
		a.pendingByPeer[peer.PID]++
	}
	a.unregistered++
	return nil
}

// refusal is a connection admitConnLocked refused.
type refusal struct {
	msg  string // the log line
	args []any  // its attributes
	err  error  // what startConn returns
}

// leaveConnLocked ends the count of a connection admitted by
// admitConnLocked. The caller holds a.mu.
func (a *Adaptation) leaveConnLocked(peer *identity.Peer) {
	a.unregistered--
	if peer == nil {
		return
	}
	if a.pendingByPeer[peer.PID]--; a.pendingByPeer[peer.PID] <= 0 {
		delete(a.pendingByPeer, peer.PID)
	}
}
