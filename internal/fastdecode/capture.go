package fastdecode

import (
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/runtime/protoiface"
)

// NewCapture is for callers that cannot hand Unmarshal the bytes of a
// request, only have them decoded into a message of their choice (a
// ttrpc handler's unmarshal function). It returns an empty message to
// decode the bytes of m into, and finish, which then decodes what was
// captured into m as Unmarshal would have decoded the bytes. For a type
// without a fast path (see Supports) capture is nil: decode into m
// directly.
//
// Capturing copies nothing: the capture keeps the slice proto.Unmarshal
// is given (see captured), and finish decodes with
// UnmarshalOptions.OwnedInput: the hand-decoded strings of pods and
// containers point into those bytes instead of being copied (about 150
// allocations fewer for a CreateContainer request of 2.4 KB). So the
// caller must hand the capture bytes that are its own and that nothing
// writes to afterwards, ever, as ttrpc's request payload is (a copy made
// for the request when ttrpc decodes its envelope); a string kept from m
// keeps all of the request's bytes alive (a Synchronize part is at most a
// few megabytes; see the stub's documentation).
func NewCapture(m proto.Message) (capture proto.Message, finish func() error) {
	if !Supports(m) {
		return nil, nil
	}
	if x, ok := m.(*api.SynchronizeRequest); ok {
		capture, _, finish := CaptureSynchronize(x)
		return capture, finish
	}
	c := newCaptured()
	o := UnmarshalOptions{OwnedInput: true}
	return c, func() error { return o.Unmarshal(c.buf, m) }
}

// CaptureSynchronize is NewCapture for a SynchronizeRequest whose pods
// and containers the caller decodes later, perhaps on another goroutine:
// with the bytes captured, more reports the request's more field without
// decoding anything else (what x.More will be after finish); finish
// decodes x as NewCapture's does. more fails on bytes that are not a
// valid encoding at the top level; finish then fails too.
func CaptureSynchronize(x *api.SynchronizeRequest) (capture proto.Message, more func() (bool, error), finish func() error) {
	c := newCaptured()
	o := UnmarshalOptions{OwnedInput: true}
	return c, func() (bool, error) { return synchronizeMore(c.buf) },
		func() error { return o.Unmarshal(c.buf, x) }
}

// synchronizeMore returns the more field (3) of the encoded
// SynchronizeRequest b as decodeSynchronize sets it: the last occurrence
// with the varint wire type wins (one of another type is an unknown
// field). Pods and containers are skipped, not decoded.
func synchronizeMore(b []byte) (bool, error) {
	more := false
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return false, errDecode
		}
		b = b[n:]
		if num == 3 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false, errDecode
			}
			more = v != 0
			b = b[n:]
			continue
		}
		n, err := skipField(num, typ, b)
		if err != nil {
			return false, err
		}
		b = b[n:]
	}
	return more, nil
}

// captured is the capture of NewCapture: a proto.Message whose decoding
// keeps the bytes it is given instead of copying them. To protobuf-go it
// is an api.Empty whose unknown fields are those bytes, which is what
// decoding any message into an Empty gives, so reflection over it (a
// ttrpc interceptor printing the request, say) sees a valid message.
type captured struct {
	// Message is the reflection of an empty api.Empty of its own: the
	// descriptor, type and (no) fields of a capture. Methods that would
	// change it are overridden below.
	protoreflect.Message
	buf []byte
}

var _ protoreflect.Message = (*captured)(nil)

// newCaptured returns an empty capture.
func newCaptured() *captured {
	return &captured{Message: (&api.Empty{}).ProtoReflect()}
}

// ProtoReflect makes a capture a proto.Message; it is its own reflection.
func (c *captured) ProtoReflect() protoreflect.Message { return c }

// Interface returns the capture itself, so that proto.Reset reaches Reset.
func (c *captured) Interface() protoreflect.ProtoMessage { return c }

// Reset forgets the captured bytes.
func (c *captured) Reset() { c.buf = nil }

// GetUnknown returns the captured bytes: to protobuf-go every field of
// the captured message is an unknown field of an Empty.
func (c *captured) GetUnknown() protoreflect.RawFields { return c.buf }

// SetUnknown replaces the captured bytes.
func (c *captured) SetUnknown(b protoreflect.RawFields) { c.buf = b }

// ProtoMethods gives protobuf-go the capture's decoder, which proto.Unmarshal
// calls with the caller's bytes (without it, protobuf-go would decode
// through reflection and copy them into the unknown fields).
func (c *captured) ProtoMethods() *protoiface.Methods {
	return &protoiface.Methods{Unmarshal: unmarshalCaptured}
}

// unmarshalCaptured is the capture's decoder: the bytes become the
// capture's own. Decoding more bytes into a capture that holds some
// (proto.UnmarshalOptions{Merge: true}) appends them to a copy, which is
// what merging two encodings of one message means. Any byte sequence is
// a valid capture: the bytes are checked when finish decodes them.
func unmarshalCaptured(in protoiface.UnmarshalInput) (protoiface.UnmarshalOutput, error) {
	c := in.Message.(*captured)
	if len(c.buf) == 0 {
		c.buf = in.Buf
	} else {
		c.buf = append(c.buf[:len(c.buf):len(c.buf)], in.Buf...)
	}
	return protoiface.UnmarshalOutput{Flags: protoiface.UnmarshalInitialized}, nil
}
