package identity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults of InspectOptions.
const (
	// DefaultProcRoot is where procfs is mounted.
	DefaultProcRoot = "/proc"
	// DefaultMaxExecutableSize is the largest executable Inspect hashes:
	// a Go plugin is tens of MiB, node about 100.
	DefaultMaxExecutableSize = 256 << 20
	// DefaultHashTimeout bounds the hashing of an executable.
	DefaultHashTimeout = 2 * time.Second
)

// maxCgroupFile bounds what Inspect reads of /proc/PID/cgroup.
const maxCgroupFile = 64 << 10

// InspectOptions bounds what Peer.Inspect reads.
type InspectOptions struct {
	// ProcRoot is where procfs is mounted; empty: DefaultProcRoot.
	ProcRoot string
	// MaxExecutableSize is the largest executable hashed, in bytes; 0:
	// DefaultMaxExecutableSize. A larger one is not hashed (the identity
	// has no digest, and says why).
	MaxExecutableSize int64
	// HashTimeout bounds the hashing (checked between reads of 1 MiB);
	// 0: DefaultHashTimeout. ctx's deadline bounds it too.
	HashTimeout time.Duration
	// Digests caches the digests of executables by file (device, inode,
	// size, modification and change times); nil: none.
	Digests *DigestCache
}

func (o *InspectOptions) procRoot() string {
	if o.ProcRoot == "" {
		return DefaultProcRoot
	}
	return o.ProcRoot
}

func (o *InspectOptions) maxSize() int64 {
	if o.MaxExecutableSize <= 0 {
		return DefaultMaxExecutableSize
	}
	return o.MaxExecutableSize
}

func (o *InspectOptions) hashTimeout() time.Duration {
	if o.HashTimeout <= 0 {
		return DefaultHashTimeout
	}
	return o.HashTimeout
}

// Peer is the process at the other end of a unix socket connection, as
// the kernel reported it when the runtime took the connection ([Capture]).
// It holds a pidfd of the process until Close. Its methods are safe for
// concurrent use.
type Peer struct {
	// PID, UID and GID are SO_PEERCRED's.
	PID, UID, GID int

	mu      sync.Mutex
	pidfd   int // -1: none
	pinning Pinning
	closed  bool
}

// ErrClosed is returned by Inspect after Close.
var ErrClosed = errors.New("identity: peer closed")

// Close releases the pidfd. It is idempotent.
func (p *Peer) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.pidfd < 0 {
		return nil
	}
	err := closeFD(p.pidfd)
	p.pidfd = -1
	return err
}

// Inspect reads what /proc shows of the peer's process: its executable
// (path and digest) and its cgroup. It does not fail: what it could not
// read is said in the Process's Unread (a process gone, not visible in
// the runtime's PID namespace, an executable too large or on FUSE).
func (p *Peer) Inspect(ctx context.Context, opts InspectOptions) *Process {
	proc := &Process{PID: p.PID, UID: p.UID, GID: p.GID}
	if p.PID <= 0 {
		proc.Unread = append(proc.Unread, "process: not visible in the runtime's PID namespace")
		return proc
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		proc.Unread = append(proc.Unread, "process: "+ErrClosed.Error())
		return proc
	}
	proc.Pinning = p.pinning
	if err := inspect(ctx, p.pidfd, p.PID, proc, &opts); err != nil {
		proc.Unread = append(proc.Unread, fmt.Sprintf("process: %v", err))
	}
	return proc
}
