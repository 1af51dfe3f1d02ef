package wirelimit

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// field wraps b as field num (length-delimited).
func wrap(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

// padTo appends unknown fields (number 999, 3 bytes each) to b up to size
// bytes.
func padTo(b []byte, size int) []byte {
	one := protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 0)
	for len(b)+len(one) <= size {
		b = append(b, one...)
	}
	return b
}

// liveAfter returns the live heap bytes f's result holds.
func liveAfter(f func() any) (uint64, any) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc), v
}

// worstCases are messages built to decode into as much as the bounds
// allow, of size bytes, as the answer to method.
func worstCases(size int) []struct {
	name, method string
	b            []byte
} {
	n := MaxValues - 2 // room for adjust and the nested message on the path
	entries := func(num protowire.Number, k int) []byte { return bytes.Repeat(wrap(num, nil), k) }
	keyed := func(num protowire.Number, k int, value []byte) []byte {
		var b []byte
		for i := range k {
			entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), fmt.Sprint(i))
			entry = append(entry, value...)
			b = append(b, wrap(num, entry)...)
		}
		return b
	}
	return []struct {
		name, method string
		b            []byte
	}{
		{"adjust.mounts: empty Mount entries", "CreateContainer", padTo(wrap(1, entries(3, n)), size)},
		{"adjust.hooks.prestart: empty Hook entries", "CreateContainer", padTo(wrap(1, wrap(5, entries(1, n))), size)},
		{"adjust.linux.devices: empty LinuxDevice entries", "CreateContainer", padTo(wrap(1, wrap(6, entries(1, n))), size)},
		{"adjust.annotations: distinct keys", "CreateContainer", padTo(wrap(1, keyed(2, n, nil)), size)},
		{"adjust.linux.net_devices: distinct keys", "CreateContainer", padTo(wrap(1, wrap(6, keyed(9, n/2, nil))), size)},
		{"adjust.args: empty strings", "CreateContainer", padTo(wrap(1, entries(9, n)), size)},
		{"adjust.mounts, each with unknown fields", "CreateContainer", func() []byte {
			per := (size - 64) / n
			m := wrap(3, padTo(nil, per-4))
			return wrap(1, bytes.Repeat(m, n))
		}()},
		{"update: 1024 updates of 31 values", "Synchronize", func() []byte {
			u := wrap(1, wrap(2, wrap(1, entries(7, 28)))) // update{linux{resources{devices × 28}}}
			return padTo(bytes.Repeat(u, MaxUpdates), size)
		}()},
	}
}

// TestDecodedWorstCase measures the live heap proto.Unmarshal makes of a
// message of 4 MiB (NRI's message limit) and of 1 MiB (the default max
// answer size): before the bounds (empty entries of a repeated field: the
// attack of issue 23), and the worst this package's bounds let through.
// The figures are the ones docs/protocol.md §12.2 gives:
//
//	go test -run TestDecodedWorstCase -v ./internal/wirelimit
func TestDecodedWorstCase(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 1 GiB")
	}
	const size = 4 << 20
	mib := func(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	for _, tc := range []struct {
		name string
		s    *Schema
		m    proto.Message
		b    []byte
	}{
		{"CreateContainerResponse.update", Answer("CreateContainer"), &api.CreateContainerResponse{}, bytes.Repeat(wrap(2, nil), size/2)},
		{"SynchronizeResponse.update", Answer("Synchronize"), &api.SynchronizeResponse{}, bytes.Repeat(wrap(1, nil), size/2)},
		{"UpdateContainersRequest.update", Request("UpdateContainers"), &api.UpdateContainersRequest{}, bytes.Repeat(wrap(1, nil), size/2)},
		{"ttrpc Response.status.details", ResponseEnvelope(), &ttrpc.Response{}, wrap(1, bytes.Repeat(wrap(3, nil), size/2-4))},
		{"ttrpc Request.metadata", RequestEnvelope(), &ttrpc.Request{}, bytes.Repeat(wrap(5, nil), size/2)},
	} {
		live, _ := liveAfter(func() any {
			m := tc.m.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(tc.b, m); err != nil {
				t.Fatal(err)
			}
			return m
		})
		t.Logf("unbounded: 4 MiB of empty %s entries decode into %s live; Check: %v", tc.name, mib(live), tc.s.Check(tc.b))
	}
	var worst uint64
	for _, sz := range []int{size, 1 << 20} {
		for _, tc := range worstCases(sz) {
			s := Answer(tc.method)
			if err := s.Check(tc.b); err != nil {
				t.Fatalf("%s: %v (the case must be within the bounds)", tc.name, err)
			}
			mt, _ := protoregistryFind(s.Name())
			live, _ := liveAfter(func() any {
				m := mt.New().Interface()
				if err := proto.Unmarshal(tc.b, m); err != nil {
					t.Fatal(err)
				}
				return m
			})
			if sz == size {
				worst = max(worst, live)
			}
			t.Logf("within the bounds, %d bytes, %s: %s live", len(tc.b), tc.name, mib(live))
		}
	}
	t.Logf("worst within the bounds for a 4 MiB message: %s", mib(worst))
}
