package fastdecode

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// viaCapture decodes b into m the way a ttrpc handler does with
// NewCapture: b into the capture, then finish.
func viaCapture(b []byte, m proto.Message) error {
	capture, finish := NewCapture(m)
	if capture == nil {
		return proto.Unmarshal(b, m)
	}
	if err := proto.Unmarshal(b, capture); err != nil {
		return err
	}
	return finish()
}

// diffCapture is diffDecode through the capture path. A capture keeps the
// bytes (the strings point into them), so they are not overwritten.
func diffCapture(typ proto.Message, b []byte) string {
	return diffDecodeRetaining(typ, b, viaCapture, true)
}

// TestCaptureDifferential runs every hand-built case and a round trip of
// every fast type through the capture path: the results must be those of
// proto.Unmarshal.
func TestCaptureDifferential(t *testing.T) {
	for _, tc := range allCases() {
		if d := diffCapture(tc.typ, tc.b); d != "" {
			t.Errorf("%s: %s", tc.name, d)
		}
	}
	for _, typ := range fastTypes {
		full := newOf(typ)
		codecfixture.Populate(full.ProtoReflect(), 1, 2, false)
		b := mustMarshal(full)
		if d := diffCapture(typ, b); d != "" {
			t.Errorf("round trip: %s", d)
		}
	}
}

func TestCaptureTypes(t *testing.T) {
	if c, _ := NewCapture(&api.ConfigureRequest{}); c != nil {
		t.Errorf("capture %T for a type without a fast path", c)
	}
	for _, m := range []proto.Message{&api.SynchronizeRequest{}, &api.CreateContainerRequest{}} {
		if c, _ := NewCapture(m); c == nil {
			t.Errorf("no capture for %T", m)
		} else if _, ok := c.(*captured); !ok {
			t.Errorf("%T captured as %T, want *captured", m, c)
		}
	}
}

// within reports whether s's bytes lie inside b.
func within(s string, b []byte) bool {
	if len(s) == 0 || len(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(&b[0]))
	return p >= lo && p < lo+uintptr(len(b))
}

// TestCaptureKeepsBytes: capturing copies nothing, and the strings of a
// SynchronizeRequest and of an event point into the captured bytes.
func TestCaptureKeepsBytes(t *testing.T) {
	pod := codecfixture.Pod(1)
	sync := mustMarshal(&api.SynchronizeRequest{Pods: []*api.PodSandbox{pod},
		Containers: []*api.Container{codecfixture.Container(1, pod.Id)}, More: true})
	event := mustMarshal(&api.CreateContainerRequest{Pod: pod, Container: codecfixture.Container(1, pod.Id)})

	x := &api.SynchronizeRequest{}
	capture, finish := NewCapture(x)
	if allocs := testing.AllocsPerRun(10, func() {
		if err := proto.Unmarshal(sync, capture); err != nil {
			t.Fatal(err)
		}
	}); allocs > 1 {
		t.Errorf("capturing %d bytes allocates %v times, want at most 1 (no copy)", len(sync), allocs)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if !x.More || len(x.Containers) != 1 || !within(x.Containers[0].Id, sync) || !within(x.Pods[0].Name, sync) {
		t.Errorf("a captured Synchronize's strings are copies, want them in the request's bytes (more %v, %d containers)",
			x.More, len(x.Containers))
	}

	y := &api.CreateContainerRequest{}
	capture, finish = NewCapture(y)
	if err := proto.Unmarshal(event, capture); err != nil {
		t.Fatal(err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if !within(y.GetContainer().GetId(), event) || !within(y.GetPod().GetName(), event) {
		t.Errorf("a captured event's strings are copies (id %q), want them in the request's bytes", y.GetContainer().GetId())
	}
	// Through Unmarshal, whose caller may reuse its bytes, they are copies.
	z := &api.CreateContainerRequest{}
	if err := Unmarshal(event, z); err != nil {
		t.Fatal(err)
	}
	if within(z.GetContainer().GetId(), event) {
		t.Error("Unmarshal's strings point into its input")
	}
}

// TestCaptureAsMessage: to protobuf-go a capture is an Empty whose unknown
// fields are the captured bytes: merging appends, reflection sees them,
// and a reset forgets them.
func TestCaptureAsMessage(t *testing.T) {
	pod := codecfixture.Pod(2)
	a := mustMarshal(&api.CreateContainerRequest{Pod: pod})
	a0 := bytes.Clone(a)
	b := mustMarshal(&api.CreateContainerRequest{Container: codecfixture.Container(2, pod.Id)})
	x := &api.CreateContainerRequest{}
	capture, finish := NewCapture(x)
	if err := proto.Unmarshal(a, capture); err != nil {
		t.Fatal(err)
	}
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, capture); err != nil {
		t.Fatal(err)
	}
	if got, want := proto.Size(capture), len(a)+len(b); got != want {
		t.Errorf("proto.Size of the capture = %d, want %d", got, want)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	want := &api.CreateContainerRequest{}
	if err := proto.Unmarshal(append(bytes.Clone(a), b...), want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(x, want) {
		t.Errorf("merged capture decodes to\n%v\nwant\n%v", x, want)
	}
	if !bytes.Equal(a, a0) {
		t.Error("merging into the capture changed the first bytes it was given")
	}
	proto.Reset(capture)
	if n := proto.Size(capture); n != 0 {
		t.Errorf("size after Reset = %d, want 0", n)
	}
}

// FuzzCapture is FuzzUnmarshal through the capture path.
func FuzzCapture(f *testing.F) {
	for _, tc := range syncCases() {
		f.Add(uint8(typeIndex(tc.typ)), tc.b)
	}
	for i, typ := range fastTypes {
		f.Add(uint8(i), leanFull(typ))
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		typ := fastTypes[int(which)%len(fastTypes)]
		if d := diffCapture(typ, data); d != "" {
			t.Fatal(d)
		}
	})
}

// checkMore compares CaptureSynchronize's more with what proto.Unmarshal
// decodes from b: the same value when b decodes, and where more fails,
// decoding must fail too.
func checkMore(t *testing.T, b []byte) {
	t.Helper()
	want := &api.SynchronizeRequest{}
	werr := proto.Unmarshal(b, want)
	capture, more, finish := CaptureSynchronize(&api.SynchronizeRequest{})
	if err := proto.Unmarshal(b, capture); err != nil {
		t.Fatalf("capturing: %v", err)
	}
	got, err := more()
	switch {
	case err != nil && werr == nil:
		t.Errorf("more failed (%v) on a request proto.Unmarshal decodes", err)
	case err != nil && finish() == nil:
		t.Errorf("more failed (%v) but finish did not", err)
	case err == nil && werr == nil && got != want.More:
		t.Errorf("more = %v, proto.Unmarshal decodes more = %v", got, want.More)
	}
}

// TestCaptureSynchronizeMore: more reads the field without decoding the
// pods and containers, as decoding sets it (the last one of the varint
// wire type wins; one of another wire type is unknown).
func TestCaptureSynchronizeMore(t *testing.T) {
	for _, tc := range syncCases() {
		checkMore(t, tc.b)
	}
	for _, b := range [][]byte{
		nil,
		cat(tag(3, protowire.VarintType), []byte{1}),
		cat(tag(3, protowire.VarintType), []byte{1}, tag(3, protowire.VarintType), []byte{0}),
		cat(tag(3, protowire.VarintType), []byte{1}, str(3, "x")),
		cat(str(2, "\x0a\x01a"), tag(3, protowire.VarintType), []byte{0x80, 0x01}),
		cat(tag(3, protowire.VarintType), []byte{0x80}), // truncated varint
		cat(tag(2, protowire.BytesType), []byte{9, 1}),  // truncated container
	} {
		checkMore(t, b)
	}
}

// FuzzCaptureSynchronizeMore is TestCaptureSynchronizeMore on any bytes.
func FuzzCaptureSynchronizeMore(f *testing.F) {
	for _, tc := range syncCases() {
		f.Add(tc.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkMore(t, b) })
}
