package socketpair

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
)

// Pair is a connected pair of AF_UNIX SOCK_STREAM sockets: a local end for
// the runtime and a peer end for a child process. Its methods are safe for
// concurrent use.
type Pair struct {
	mu    sync.Mutex
	local *os.File // nil once converted by LocalConn or closed
	peer  *os.File // nil once closed
}

// New creates a socket pair. Both descriptors have close-on-exec set, so
// they leak into no child process except through exec.Cmd.ExtraFiles, which
// clears the flag on the child's copy only.
func New() (*Pair, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: creating socket pair: %w", os.NewSyscallError("socketpair", err))
	}
	name := fmt.Sprintf("socketpair[%d:%d]", fds[0], fds[1])
	return &Pair{
		local: os.NewFile(uintptr(fds[0]), name+".local"),
		peer:  os.NewFile(uintptr(fds[1]), name+".peer"),
	}, nil
}

// LocalConn returns the local (runtime) end as a net.Conn, a *net.UnixConn.
// The Pair's own descriptor for that end is closed (net.FileConn works on a
// duplicate), so LocalConn can be called only once; the returned conn is
// owned by the caller and not closed by Close.
func (p *Pair) LocalConn() (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.local == nil {
		return nil, errors.New("socketpair: local end already converted or closed")
	}
	f := p.local
	p.local = nil
	conn, err := net.FileConn(f)
	cerr := f.Close()
	if err != nil {
		return nil, fmt.Errorf("socketpair: wrapping local end: %w", err)
	}
	if cerr != nil {
		conn.Close()
		return nil, fmt.Errorf("socketpair: closing local descriptor: %w", cerr)
	}
	return conn, nil
}

// PeerFile returns the peer (child) end, to be passed to a child process in
// exec.Cmd.ExtraFiles. It returns nil after ClosePeer or Close.
func (p *Pair) PeerFile() *os.File {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peer
}

// ClosePeer closes this process's copy of the peer end. A runtime calls it
// once the child has been started, so that the local end sees EOF when the
// child exits. Calling it again is a no-op.
func (p *Pair) ClosePeer() error {
	p.mu.Lock()
	f := p.peer
	p.peer = nil
	p.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("socketpair: closing peer end: %w", err)
	}
	return nil
}

// Close closes the descriptors still held by the Pair: the peer end unless
// ClosePeer was called, and the local end unless LocalConn was called. A
// conn returned by LocalConn is not affected.
func (p *Pair) Close() error {
	p.mu.Lock()
	local := p.local
	p.local = nil
	p.mu.Unlock()
	var errs []error
	if local != nil {
		if err := local.Close(); err != nil {
			errs = append(errs, fmt.Errorf("socketpair: closing local end: %w", err))
		}
	}
	if err := p.ClosePeer(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// FileConn wraps an inherited socket descriptor, such as the one named by
// EnvPluginSocket in a plugin launched by the runtime, as a net.Conn. The
// descriptor is owned by FileConn afterwards: it is closed (the conn uses a
// duplicate) whether or not FileConn succeeds, unless fd is invalid or not a
// socket, in which case it is left untouched.
func FileConn(fd int) (net.Conn, error) {
	if fd < 0 {
		return nil, fmt.Errorf("socketpair: invalid file descriptor %d", fd)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("socketpair: file descriptor %d: %w", fd, os.NewSyscallError("fstat", err))
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFSOCK {
		return nil, fmt.Errorf("socketpair: file descriptor %d is not a socket (it is a %s)", fd, fileKind(kind))
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd))
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("socketpair: wrapping file descriptor %d: %w", fd, err)
	}
	return conn, nil
}

func fileKind(mode uint32) string {
	switch mode {
	case syscall.S_IFIFO:
		return "pipe"
	case syscall.S_IFREG:
		return "regular file"
	case syscall.S_IFDIR:
		return "directory"
	case syscall.S_IFCHR:
		return "character device"
	case syscall.S_IFBLK:
		return "block device"
	case syscall.S_IFLNK:
		return "symbolic link"
	default:
		return fmt.Sprintf("file of type %#o", mode)
	}
}

// PeerPID returns the process ID of the peer of a unix socket connection,
// as reported by SO_PEERCRED. For a connection accepted from or dialed to a
// listening socket this is the peer process at connect time. For the ends
// of a socket pair, Linux reports the process that created the pair, so for
// a plugin launched by the runtime PeerPID on the runtime's end returns the
// runtime's own PID, not the plugin's.
func PeerPID(conn net.Conn) (int, error) {
	cred, err := PeerCred(conn)
	return cred.PID, err
}

// PeerCred returns the credentials of the peer of a unix socket
// connection, as reported by SO_PEERCRED: those of the peer process at
// connect time (see PeerPID for socket pairs).
func PeerCred(conn net.Conn) (Cred, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return Cred{}, fmt.Errorf("socketpair: %T does not expose its file descriptor", conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("socketpair: peer credentials: %w", err)
	}
	var (
		cred *syscall.Ucred
		serr error
	)
	if err := rc.Control(func(fd uintptr) {
		cred, serr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return Cred{}, fmt.Errorf("socketpair: peer credentials: %w", err)
	}
	if serr != nil {
		return Cred{}, fmt.Errorf("socketpair: peer credentials: %w", os.NewSyscallError("getsockopt SO_PEERCRED", serr))
	}
	return Cred{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, nil
}
