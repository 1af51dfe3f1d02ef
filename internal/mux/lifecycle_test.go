package mux

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestPeerCloseMidFrame(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a)
	c := open(t, m, PluginServiceConn)
	mustWrite(t, raw, frame(1, []byte("complete")))
	mustWrite(t, raw, append(header(1, 100), make([]byte, 10)...))
	raw.Close()
	waitDone(t, m)
	const want = "mux: truncated frame for conn 1: read 10 of 100 payload bytes: unexpected EOF"
	if err := m.Err(); err == nil || err.Error() != want || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Err = %v, want %q", err, want)
	}
	// The complete frame is still delivered, then the failure.
	if got := readN(t, c, 8); string(got) != "complete" {
		t.Fatalf("got %q", got)
	}
	_, err := c.Read(make([]byte, 10))
	if err == nil || !strings.Contains(err.Error(), "truncated") || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Read after truncation = %v", err)
	}
	if _, err := c.Write([]byte("x")); err == nil || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after failure = %v", err)
	}
}

func TestPeerCloseMidHeader(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a)
	mustWrite(t, raw, []byte{0, 0, 0})
	raw.Close()
	waitDone(t, m)
	const want = "mux: truncated frame header: read 3 of 8 bytes: unexpected EOF"
	if err := m.Err(); err == nil || err.Error() != want {
		t.Fatalf("Err = %v, want %q", err, want)
	}
}

func TestPeerCloseClean(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a)
	c := open(t, m, PluginServiceConn)
	mustWrite(t, raw, frame(1, []byte("bye")))
	raw.Close()
	waitDone(t, m)
	const want = "mux: trunk closed by peer: EOF"
	if err := m.Err(); err == nil || err.Error() != want || !errors.Is(err, io.EOF) {
		t.Fatalf("Err = %v, want %q", err, want)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "bye" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read = %d, %v; want io.EOF", n, err)
	}
	if _, err := m.Open(RuntimeServiceConn); err == nil || !errors.Is(err, io.EOF) {
		t.Fatalf("Open after failure = %v", err)
	}
}

func TestCloseWhileReadBlocked(t *testing.T) {
	defer goleak.VerifyNone(t)
	a, b := unixPair(t)
	ma, err := New(a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := ma.Open(PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := ma.Open(RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 2)
	go func() { _, err := ca.Read(make([]byte, 10)); errc <- err }()
	go func() { _, err := c2.Read(make([]byte, 10)); errc <- err }()

	// Closing one logical conn unblocks only its reader.
	c2.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read on closed conn = %v, want net.ErrClosed", err)
		}
	case <-time.After(timeout):
		t.Fatal("Read not unblocked by conn Close")
	}
	if ma.Err() != nil {
		t.Fatalf("closing a logical conn failed the mux: %v", ma.Err())
	}

	if err := ma.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != io.EOF {
			t.Errorf("Read after mux Close = %v, want io.EOF", err)
		}
	case <-time.After(timeout):
		t.Fatal("Read not unblocked by mux Close")
	}
	select {
	case <-ma.Done():
	default:
		t.Fatal("Done not closed after Close returned")
	}
	if _, err := ca.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after mux Close = %v", err)
	}
	// The peer sees a clean close.
	waitDone(t, mb)
	if !errors.Is(mb.Err(), io.EOF) {
		t.Errorf("peer Err = %v", mb.Err())
	}
	mb.Close()
}

func TestReadDeadline(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a)
	c := open(t, m, PluginServiceConn)

	// A deadline in the past fails immediately.
	c.SetReadDeadline(time.Now().Add(-time.Second))
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read with past deadline = %v", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("deadline error %v is not a timeout net.Error", err)
	}

	// A deadline in the future interrupts a blocked Read.
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	errc := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); errc <- err }()
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read = %v, want deadline exceeded", err)
		}
	case <-time.After(timeout):
		t.Fatal("read deadline did not interrupt Read")
	}

	// A deadline set while a Read is blocked applies to it.
	c.SetReadDeadline(time.Time{})
	go func() { _, err := c.Read(make([]byte, 1)); errc <- err }()
	c.SetDeadline(time.Now().Add(20 * time.Millisecond))
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read = %v, want deadline exceeded", err)
		}
	case <-time.After(timeout):
		t.Fatal("deadline set during Read did not interrupt it")
	}

	// Clearing the deadline makes the conn usable again.
	c.SetDeadline(time.Time{})
	mustWrite(t, raw, frame(1, []byte("data")))
	if got := readN(t, c, 4); string(got) != "data" {
		t.Fatalf("got %q", got)
	}
	// Extending a pending deadline keeps Read blocked until data arrives.
	c.SetReadDeadline(time.Now().Add(time.Millisecond))
	c.SetReadDeadline(time.Now().Add(timeout))
	go func() { _, err := c.Read(make([]byte, 1)); errc <- err }()
	time.Sleep(5 * time.Millisecond) // not an assertion: lets a stale timer fire if buggy
	mustWrite(t, raw, frame(1, []byte("z")))
	if err := <-errc; err != nil {
		t.Fatalf("Read after extended deadline = %v", err)
	}
}

func TestWriteDeadline(t *testing.T) {
	a, _ := unixPair(t)
	m := newMux(t, a)
	c := open(t, m, PluginServiceConn)
	c.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := c.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past deadline = %v", err)
	}
	c.SetWriteDeadline(time.Time{})
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write on closed conn = %v", err)
	}
	if err := c.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("SetDeadline on closed conn = %v", err)
	}
}

func TestCloseSendsNothing(t *testing.T) {
	trunk := newMemConn(nil, make(chan struct{}))
	m, err := New(trunk)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := m.Open(PluginServiceConn)
	c.Write([]byte("hi"))
	c.Close()
	l, _ := m.Listen(RuntimeServiceConn)
	l.Close()
	m.Close()
	trunk.mu.Lock()
	defer trunk.mu.Unlock()
	if want := frame(1, []byte("hi")); !bytes.Equal(trunk.w.Bytes(), want) {
		t.Fatalf("wire = % x, want % x", trunk.w.Bytes(), want)
	}
}

func TestWriteFailureFailsMux(t *testing.T) {
	a, _ := unixPair(t)
	m := newMux(t, a)
	c := open(t, m, PluginServiceConn)
	// Shut down only our sending direction, so the reader keeps running
	// and the write error is the cause.
	a.(*net.UnixConn).CloseWrite()
	if _, err := c.Write([]byte("x")); err == nil {
		t.Fatal("Write on a broken trunk succeeded")
	}
	waitDone(t, m)
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), "writing frame") {
		t.Fatalf("Err = %v", err)
	}
}

func TestListener(t *testing.T) {
	a, _ := unixPair(t)
	m := newMux(t, a)
	l, err := m.Listen(PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.Addr().String(), "mux:1") {
		t.Errorf("Addr = %v", l.Addr())
	}
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() { _, err := l.Accept(); errc <- err }()
	l.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close = %v", err)
		}
	case <-time.After(timeout):
		t.Fatal("Accept not unblocked by Close")
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on closed listener = %v", err)
	}
	// The accepted conn outlives the listener.
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}

	// Closing a listener before Accept closes its conn; the ID is retired.
	l2, err := m.Listen(RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if _, err := m.Open(RuntimeServiceConn); err == nil {
		t.Fatal("Open of a closed listener's conn succeeded")
	}

	// Mux shutdown unblocks Accept.
	l3, err := m.Listen(3)
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	if _, err := l3.Accept(); err != nil {
		t.Fatal(err)
	}
	go func() { _, err := l3.Accept(); errc <- err }()
	m.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after mux Close = %v", err)
		}
	case <-time.After(timeout):
		t.Fatal("Accept not unblocked by mux Close")
	}
}
