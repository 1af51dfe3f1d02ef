package fastdecode

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

func benchCreateContainer() *api.CreateContainerRequest {
	p := codecfixture.Pod(0)
	return &api.CreateContainerRequest{Pod: p, Container: codecfixture.Container(0, p.Id)}
}

func benchSynchronize() *api.SynchronizeRequest {
	s := &api.SynchronizeRequest{More: true}
	for i := 0; i < 100; i++ {
		s.Pods = append(s.Pods, codecfixture.Pod(i))
	}
	for i := 0; i < 1000; i++ {
		s.Containers = append(s.Containers, codecfixture.Container(i, s.Pods[i%100].Id))
	}
	return s
}

func benchDecode(b *testing.B, msg proto.Message) {
	data := mustMarshal(msg)
	// Sanity: both decoders agree on the benchmark input.
	if d := diffDecode(msg, data, Unmarshal); d != "" {
		b.Fatal(d)
	}
	for _, dec := range []struct {
		name string
		fn   func([]byte, proto.Message) error
	}{{"proto", proto.Unmarshal}, {"fastdecode", Unmarshal}} {
		b.Run(dec.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				m := newOf(msg)
				if err := dec.fn(data, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCreateContainer: a CreateContainerRequest of about 2.4 KB.
func BenchmarkCreateContainer(b *testing.B) { benchDecode(b, benchCreateContainer()) }

// BenchmarkSynchronize: a Synchronize part of 100 pods and 1,000 containers.
func BenchmarkSynchronize(b *testing.B) { benchDecode(b, benchSynchronize()) }

// BenchmarkSupports: the cost of finding a message type's fast path, the
// first and the last of the table, and a type without one.
func BenchmarkSupports(b *testing.B) {
	for _, m := range []proto.Message{&api.SynchronizeRequest{}, &api.PostUpdateContainerRequest{}, &api.UpdateContainerRequest{}} {
		want := m.ProtoReflect().Descriptor().Name() != "UpdateContainerRequest"
		b.Run(string(m.ProtoReflect().Descriptor().Name()), func(b *testing.B) {
			for b.Loop() {
				if Supports(m) != want {
					b.Fatal("wrong answer")
				}
			}
		})
	}
}
