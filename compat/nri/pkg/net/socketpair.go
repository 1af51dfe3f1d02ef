package net

import (
	"fmt"
	"net"
	"os"
)

// SocketPair is a connected pair of sockets, both ends close-on-exec.
type SocketPair struct {
	local, peer *os.File
}

// NewSocketPair returns a connected pair of stream sockets.
func NewSocketPair() (SocketPair, error) {
	fds, err := socketPairCloexec()
	if err != nil {
		return SocketPair{}, fmt.Errorf("failed to create socketpair: %w", err)
	}
	name := fmt.Sprintf("socketpair-#%d:%d", fds[0], fds[1])
	return SocketPair{
		local: os.NewFile(uintptr(fds[0]), name+"[0]"),
		peer:  os.NewFile(uintptr(fds[1]), name+"[1]"),
	}, nil
}

// LocalFile returns the local end.
func (sp SocketPair) LocalFile() *os.File { return sp.local }

// PeerFile returns the peer end, to hand to another process.
func (sp SocketPair) PeerFile() *os.File { return sp.peer }

// LocalConn returns a connection for the local end, and closes
// LocalFile.
func (sp SocketPair) LocalConn() (net.Conn, error) { return fileConn(sp.local) }

// PeerConn returns a connection for the peer end, and closes PeerFile.
func (sp SocketPair) PeerConn() (net.Conn, error) { return fileConn(sp.peer) }

// Close closes both ends.
func (sp SocketPair) Close() {
	sp.LocalClose()
	sp.PeerClose()
}

// LocalClose closes the local end.
func (sp SocketPair) LocalClose() { sp.local.Close() }

// PeerClose closes the peer end.
func (sp SocketPair) PeerClose() { sp.peer.Close() }

func fileConn(f *os.File) (net.Conn, error) {
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("failed to create net.Conn for %s: %w", f.Name(), err)
	}
	return conn, nil
}
