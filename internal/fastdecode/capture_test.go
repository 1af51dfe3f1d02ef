package fastdecode

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
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

// TestCaptureDifferential runs every hand-built case and a round trip of
// every fast type through the capture path: the results must be those of
// proto.Unmarshal.
func TestCaptureDifferential(t *testing.T) {
	for _, tc := range allCases() {
		if d := diffDecode(tc.typ, tc.b, viaCapture); d != "" {
			t.Errorf("%s: %s", tc.name, d)
		}
	}
	for _, typ := range fastTypes {
		full := newOf(typ)
		codecfixture.Populate(full.ProtoReflect(), 1, 2, false)
		b := mustMarshal(full)
		if d := diffDecode(typ, b, viaCapture); d != "" {
			t.Errorf("round trip: %s", d)
		}
	}
}

func TestCaptureTypes(t *testing.T) {
	if c, _ := NewCapture(&api.ConfigureRequest{}); c != nil {
		t.Errorf("capture %T for a type without a fast path", c)
	}
	c, _ := NewCapture(&api.SynchronizeRequest{})
	if _, ok := c.(*api.Empty); ok || c == nil {
		t.Errorf("SynchronizeRequest captured as %T, want the per-object capture", c)
	}
	if c, _ := NewCapture(&api.CreateContainerRequest{}); c == nil {
		t.Error("no capture for CreateContainerRequest")
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
		if d := diffDecode(typ, data, viaCapture); d != "" {
			t.Fatal(d)
		}
	})
}
