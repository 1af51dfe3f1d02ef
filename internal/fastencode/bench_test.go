package fastencode

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

func TestBenchMessages(t *testing.T) {
	p := codecfixture.Pod(0)
	for _, m := range []proto.Message{p, codecfixture.Container(0, p.Id)} {
		if d := diffEncode(fast, m, false); d != "" {
			t.Errorf("%T: %s", m, d)
		}
	}
}

// benchProto is what callers do today: a size pass, then MarshalAppend
// with the cached sizes, into a reused buffer.
func benchProto(b *testing.B, m proto.Message) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(proto.Size(m)))
	for b.Loop() {
		n := proto.Size(m)
		var err error
		buf, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf[:0], m)
		if err != nil || len(buf) != n {
			b.Fatal(err, len(buf), n)
		}
	}
}

func benchFast(b *testing.B, m proto.Message) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(proto.Size(m)))
	for b.Loop() {
		n := fast.size(m)
		var err error
		buf, err = fast.append(buf[:0], m)
		if err != nil || len(buf) != n {
			b.Fatal(err, len(buf), n)
		}
	}
}

// benchProtoAppend and benchFastAppend: the append pass alone (no size pass).
func benchProtoAppend(b *testing.B, m proto.Message) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func benchFastAppend(b *testing.B, m proto.Message) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = fast.append(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPod(b *testing.B) {
	p := codecfixture.Pod(0)
	b.Run("proto/size+append", func(b *testing.B) { benchProto(b, p) })
	b.Run("fastencode/size+append", func(b *testing.B) { benchFast(b, p) })
	b.Run("proto/append", func(b *testing.B) { benchProtoAppend(b, p) })
	b.Run("fastencode/append", func(b *testing.B) { benchFastAppend(b, p) })
}

func BenchmarkContainer(b *testing.B) {
	c := codecfixture.Container(0, codecfixture.Pod(0).Id)
	b.Run("proto/size+append", func(b *testing.B) { benchProto(b, c) })
	b.Run("fastencode/size+append", func(b *testing.B) { benchFast(b, c) })
	b.Run("proto/append", func(b *testing.B) { benchProtoAppend(b, c) })
	b.Run("fastencode/append", func(b *testing.B) { benchFastAppend(b, c) })
}
