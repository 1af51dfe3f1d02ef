//go:build unix

package net

import (
	"io"
	"testing"
)

// TestSocketPair: bytes written at one end of a pair arrive at the other,
// and a listener over a connection accepts it once, then io.EOF after
// Close.
func TestSocketPair(t *testing.T) {
	sp, err := NewSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	local, err := sp.LocalConn()
	if err != nil {
		t.Fatal(err)
	}
	peerFd := int(sp.PeerFile().Fd())
	peer, err := NewFdConn(peerFd)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	l := NewConnListener(local)
	conn, err := l.Accept()
	if err != nil || conn != local {
		t.Fatalf("Accept = %v, %v; want the wrapped connection", conn, err)
	}
	if _, err := peer.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v; want ping", buf, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accept(); err != io.EOF {
		t.Errorf("Accept after Close = %v, want io.EOF", err)
	}
	if _, err := peer.Read(buf); err != io.EOF {
		t.Errorf("peer read after the listener closed the connection = %v, want io.EOF", err)
	}
}
