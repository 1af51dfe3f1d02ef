package mux

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/containerd/ttrpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var benchSizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}}

func BenchmarkRoundTrip(b *testing.B) {
	for _, s := range benchSizes {
		b.Run("mux/"+s.name, func(b *testing.B) { benchMuxRoundTrip(b, s.size) })
	}
	for _, s := range benchSizes {
		b.Run("raw/"+s.name, func(b *testing.B) { benchRawRoundTrip(b, s.size) })
	}
}

// benchMuxRoundTrip sends size bytes through a logical conn and reads the
// echo back.
func benchMuxRoundTrip(b *testing.B, size int) {
	ta, tb := unixPair(b)
	ma, mb := newMux(b, ta), newMux(b, tb)
	ca, cb := open(b, ma, PluginServiceConn), open(b, mb, PluginServiceConn)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(cb, buf); err != nil {
				return
			}
			if _, err := cb.Write(buf); err != nil {
				return
			}
		}
	}()
	payload := make([]byte, size)
	buf := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ca.Write(payload); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(ca, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	ma.Close()
	mb.Close()
	wg.Wait()
}

// benchRawRoundTrip does the same ping-pong directly on the unix conns,
// with the same bytes on the wire: an 8-byte header and the payload.
func benchRawRoundTrip(b *testing.B, size int) {
	a, c := unixPair(b)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var hdr [HeaderSize]byte
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			n := binary.BigEndian.Uint32(hdr[4:])
			if _, err := io.ReadFull(c, buf[:n]); err != nil {
				return
			}
			bufs := net.Buffers{hdr[:], buf[:n]}
			if _, err := bufs.WriteTo(c); err != nil {
				return
			}
		}
	}()
	payload := make([]byte, size)
	buf := make([]byte, size)
	var hdr, rhdr [HeaderSize]byte
	binary.BigEndian.PutUint32(hdr[0:], uint32(PluginServiceConn))
	binary.BigEndian.PutUint32(hdr[4:], uint32(size))
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		bufs := net.Buffers{hdr[:], payload}
		if _, err := bufs.WriteTo(a); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(a, rhdr[:]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(a, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	a.Close()
	c.Close()
	wg.Wait()
}

// oneConnListener returns conn from its first Accept and then blocks until
// closed.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	closed chan struct{}
	cOnce  sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.conn })
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.cOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

func BenchmarkTTRPCRoundTrip(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		cc, sc := unixPair(b)
		benchTTRPC(b, cc, &oneConnListener{conn: sc, closed: make(chan struct{})})
	})
	b.Run("mux", func(b *testing.B) {
		cc, sc := unixPair(b)
		mc, ms := newMux(b, cc), newMux(b, sc)
		l, err := ms.Listen(PluginServiceConn)
		if err != nil {
			b.Fatal(err)
		}
		benchTTRPC(b, open(b, mc, PluginServiceConn), l)
	})
}

func benchTTRPC(b *testing.B, clientConn net.Conn, l net.Listener) {
	stop := ttrpcServer(b, l, testPluginService, echoService(""))
	client := ttrpc.NewClient(clientConn)
	ctx := context.Background()
	req := wrapperspb.Bytes(make([]byte, 2<<10))
	var resp wrapperspb.BytesValue
	b.SetBytes(2 << 10)
	b.ReportAllocs()
	for b.Loop() {
		if err := client.Call(ctx, testPluginService, "Echo", req, &resp); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	client.Close()
	stop()
}
