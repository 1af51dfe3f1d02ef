package net

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
)

// NewFdConn returns a connection for the socket fd, which it takes over:
// fd is closed, the connection holds a duplicate.
func NewFdConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "fd #"+strconv.Itoa(fd))
	if f == nil {
		return nil, fmt.Errorf("invalid file descriptor %d", fd)
	}
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("failed to create net.Conn for fd #%d: %w", fd, err)
	}
	return conn, nil
}

// NewConnListener returns a listener whose first Accept returns conn;
// later calls block until the listener is closed, then return io.EOF.
// Closing the listener closes conn.
func NewConnListener(conn net.Conn) net.Listener {
	l := &connListener{conn: conn, next: make(chan net.Conn, 1), closed: make(chan struct{})}
	l.next <- conn
	return l
}

type connListener struct {
	conn      net.Conn
	next      chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.next:
		return c, nil
	case <-l.closed:
		return nil, io.EOF
	}
}

func (l *connListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.closeErr = l.conn.Close()
	})
	return l.closeErr
}

func (l *connListener) Addr() net.Addr { return l.conn.LocalAddr() }
