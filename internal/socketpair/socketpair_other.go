//go:build !linux

package socketpair

import (
	"fmt"
	"net"
	"os"
	"runtime"
)

// unsupported is the error of every operation on this system.
func unsupported(op string) error {
	return fmt.Errorf("socketpair: %s on %s: %w", op, runtime.GOOS, ErrUnsupported)
}

// Pair is a connected pair of AF_UNIX SOCK_STREAM sockets on Linux; on
// this system New never returns one.
type Pair struct{}

// New fails on this system: launching plugins over socket pairs needs
// Linux.
func New() (*Pair, error) { return nil, unsupported("creating a socket pair") }

// LocalConn fails on this system.
func (p *Pair) LocalConn() (net.Conn, error) { return nil, unsupported("LocalConn") }

// PeerFile returns nil on this system.
func (p *Pair) PeerFile() *os.File { return nil }

// ClosePeer does nothing on this system.
func (p *Pair) ClosePeer() error { return nil }

// Close does nothing on this system.
func (p *Pair) Close() error { return nil }

// FileConn fails on this system: a plugin cannot inherit a socket-pair
// end here.
func FileConn(fd int) (net.Conn, error) {
	return nil, unsupported(fmt.Sprintf("wrapping inherited descriptor %d", fd))
}

// PeerPID fails on this system.
func PeerPID(conn net.Conn) (int, error) { return 0, unsupported("reading the peer's process ID") }

// PeerCred fails on this system.
func PeerCred(conn net.Conn) (Cred, error) {
	return Cred{}, unsupported("reading the peer's credentials")
}
