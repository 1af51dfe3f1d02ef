//go:build linux

package identity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"
)

// Linux's numbers the syscall package does not have, the same on every
// architecture (SO_PEERPIDFD: peerpidfd_*.go).
const (
	sysPidfdSendSignal = 424 // pidfd_send_signal, Linux 5.1
	sysPidfdOpen       = 434 // pidfd_open, Linux 5.3
	fuseSuperMagic     = 0x65735546
)

// Capture returns the peer of conn, a unix socket connection accepted
// from (or dialed to) a listening socket: SO_PEERCRED's credentials, and
// a pidfd of the process that connected (SO_PEERPIDFD) or, on a kernel
// without it, one opened now (pidfd_open). Call it as soon as the
// connection is accepted, and Close the Peer when done with it. For a
// socket pair's end it returns the process that made the pair.
func Capture(conn net.Conn) (*Peer, error) { return capture(conn, true) }

// capture is Capture; peerPIDFD false skips SO_PEERPIDFD, as a kernel
// without it does (for tests of the fallback).
func capture(conn net.Conn, peerPIDFD bool) (*Peer, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("identity: %T does not expose its file descriptor", conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("identity: peer credentials: %w", err)
	}
	var (
		cred       *syscall.Ucred
		credErr    error
		pidfd            = -1
		pidfdErr   error = syscall.ENOPROTOOPT
		controlErr error
	)
	controlErr = rc.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		if credErr == nil && peerPIDFD {
			pidfd, pidfdErr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, soPeerPIDFD)
		}
	})
	if controlErr != nil {
		return nil, fmt.Errorf("identity: peer credentials: %w", controlErr)
	}
	if credErr != nil {
		return nil, fmt.Errorf("identity: peer credentials: %w", os.NewSyscallError("getsockopt SO_PEERCRED", credErr))
	}
	p := &Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid), pidfd: -1}
	switch {
	case pidfdErr == nil:
		p.pidfd, p.pinning = pidfd, PinPeerPIDFD
		return p, nil
	case !errors.Is(pidfdErr, syscall.ENOPROTOOPT):
		// The kernel has SO_PEERPIDFD, and the process that connected is
		// gone (ESRCH; EINVAL before Linux 6.9): its PID may name another
		// process already.
		p.closed = true
		return p, nil
	case p.PID <= 0:
		return p, nil
	}
	fd, err := pidfdOpen(p.PID)
	switch {
	case err == nil:
		p.pidfd, p.pinning = fd, PinAccept
	case errors.Is(err, syscall.ESRCH):
		p.closed = true
	}
	return p, nil
}

// pidfdOpen opens a pidfd of the process pid (close-on-exec).
func pidfdOpen(pid int) (int, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// pidfdAlive reports an error if the process of pidfd has exited (its PID
// may then be another process's).
func pidfdAlive(pidfd int) error {
	_, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(pidfd), 0, 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func closeFD(fd int) error { return syscall.Close(fd) }

// inspect fills proc from /proc/PID, opened once and checked to be the
// peer's (pidfd still alive after the open: the PID was not reused, and
// the directory stays bound to that process), then read through.
func inspect(ctx context.Context, pidfd, pid int, proc *Process, opts *InspectOptions) error {
	dir := filepath.Join(opts.procRoot(), strconv.Itoa(pid))
	dirfd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer syscall.Close(dirfd)
	if pidfd >= 0 {
		if err := pidfdAlive(pidfd); err != nil {
			return fmt.Errorf("the process that connected has exited: %w", err)
		}
	}
	if text, err := readAt(dirfd, "cgroup", maxCgroupFile); err != nil {
		proc.Unread = append(proc.Unread, fmt.Sprintf("cgroup: %v", err))
	} else if proc.Cgroup, err = ProcCgroup(text); err != nil {
		proc.Unread = append(proc.Unread, fmt.Sprintf("cgroup: %v", err))
	}
	if proc.Exe, err = readlinkAt(dirfd, "exe"); err != nil {
		proc.Unread = append(proc.Unread, fmt.Sprintf("executable path: %v", err))
	}
	if proc.Digest, err = digestAt(ctx, dirfd, "exe", opts); err != nil {
		proc.Unread = append(proc.Unread, fmt.Sprintf("executable: %v", err))
	}
	return nil
}

// openAt opens name in the directory dirfd, read-only.
func openAt(dirfd int, name string) (*os.File, error) {
	fd, err := syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// readAt reads name in dirfd, at most limit bytes.
func readAt(dirfd int, name string, limit int64) (string, error) {
	f, err := openAt(dirfd, name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > limit {
		return "", fmt.Errorf("larger than %d bytes", limit)
	}
	return string(b), nil
}

// readlinkAt reads the symbolic link name in dirfd.
func readlinkAt(dirfd int, name string) (string, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return "", err
	}
	buf := make([]byte, syscall.PathMax)
	n, _, errno := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
	if errno != 0 {
		return "", errno
	}
	return string(buf[:n]), nil
}

// digestAt hashes the file name of dirfd (the executable) within the
// bounds of opts.
func digestAt(ctx context.Context, dirfd int, name string, opts *InspectOptions) (string, error) {
	f, err := openAt(dirfd, name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return "", err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", errors.New("not a regular file, not hashed")
	}
	if st.Size > opts.maxSize() {
		return "", fmt.Errorf("%d bytes, larger than %d: not hashed", st.Size, opts.maxSize())
	}
	var fs syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &fs); err == nil && uint64(fs.Type) == fuseSuperMagic {
		// A FUSE daemon could stall the read for ever.
		return "", errors.New("on a FUSE file system: not hashed")
	}
	key := fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	return opts.Digests.digest(key, func() (string, error) {
		return hashFile(ctx, f, st.Size, opts)
	})
}
