// Package sockfile creates the unix sockets nrikit listens on so that no
// other user can connect to them at any moment: the socket is bound in a
// private directory (mode 0700) made next to its path, given mode 0600
// there, and renamed into place. Binding at the path and restricting the
// mode afterwards would leave a window in which the umask decides who
// can connect.
package sockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// maxPath is the longest path a unix socket can be bound to on Linux
// (sun_path holds 108 bytes with the terminating NUL).
const maxPath = 107

// Listener is a unix socket listener made by Listen. Close removes the
// socket file, if it is still the one Listen made.
type Listener struct {
	*net.UnixListener
	path string
	info fs.FileInfo

	once sync.Once
	err  error
}

// Listen listens on the unix socket path, mode 0600: the socket is bound
// in a new private directory in path's directory and renamed to path,
// replacing what is there (the caller checks that it is a stale socket).
// bound, if not nil, is called with the path the socket was bound to,
// before it is renamed (tests use it to look at the socket then).
func Listen(path string, bound func(path string)) (*Listener, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	tmp, err := os.MkdirTemp(dir, privatePattern)
	if err != nil {
		return nil, fmt.Errorf("making a private directory for the socket: %w", err)
	}
	defer os.RemoveAll(tmp)
	private := filepath.Join(tmp, "s")
	if len(private) > maxPath { // CheckPath allowed for the longest name MkdirTemp makes
		return nil, fmt.Errorf("socket %s: the path it is bound at first, %s, is longer than the %d bytes a unix socket path may have",
			path, private, maxPath)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: private, Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false)
	fail := func(err error) (*Listener, error) {
		l.Close()
		return nil, err
	}
	if err := os.Chmod(private, 0o600); err != nil {
		return fail(fmt.Errorf("restricting the socket's mode: %w", err))
	}
	if bound != nil {
		bound(private)
	}
	if err := os.Rename(private, path); err != nil {
		return fail(fmt.Errorf("moving the socket into place: %w", err))
	}
	info, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return &Listener{UnixListener: l, path: path, info: info}, nil
}

// privatePattern is the pattern of the private directory's name, and
// privateLen the length of the path Listen binds below the socket's
// directory at most: "/" + the pattern + MkdirTemp's random number (at
// most 10 digits) + "/s".
const (
	privatePattern = ".sock"
	privateLen     = 1 + len(privatePattern) + 10 + 2
)

// CheckPath returns why the unix socket path cannot be bound by Listen,
// or nil: a unix socket path may have maxPath bytes, and Listen binds
// the socket up to privateLen bytes below its directory first.
func CheckPath(path string) error {
	dir := filepath.Dir(path)
	if max := maxPath - privateLen; len(path) > maxPath || len(dir) > max {
		return fmt.Errorf("socket path %s is too long: a unix socket path may have %d bytes, and the socket is first bound in a "+
			"private directory inside %s, which may therefore have %d bytes at most (it has %d); choose a shorter path",
			path, maxPath, dir, max, len(dir))
	}
	return nil
}

// Close closes the listener and removes its socket file, unless another
// file took its place meanwhile.
func (l *Listener) Close() error {
	l.once.Do(func() {
		l.err = l.UnixListener.Close()
		if info, err := os.Lstat(l.path); err == nil && os.SameFile(info, l.info) {
			if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) && l.err == nil {
				l.err = fmt.Errorf("removing the socket: %w", err)
			}
		}
	})
	return l.err
}

// Path returns the socket's path.
func (l *Listener) Path() string { return l.path }

// CheckDir checks that dir is a directory only this process's user can
// change: owned by the effective user ID (on Unix) and not writable by
// its group or others. Anyone who can change it could replace the socket
// in it with their own.
func CheckDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("socket directory %s is not a directory", dir)
	}
	if uid, ok := owner(info); ok && uid != os.Geteuid() {
		return fmt.Errorf("socket directory %s is owned by uid %d, not by this process's uid %d", dir, uid, os.Geteuid())
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("socket directory %s is writable by other users (mode %v)", dir, info.Mode())
	}
	return nil
}
