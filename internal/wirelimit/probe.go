package wirelimit

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/runtime/protoiface"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Probe is a proto.Message whose decoding checks the bytes against a
// [Schema] instead of decoding them: handed to code that decodes a
// message it is given with proto.Unmarshal (such as the unmarshal
// function ttrpc passes a server method or interceptor), it makes that
// code check the bytes where they are, without a copy of them.
// [Probe.Err] returns the check's error (the decoding code may have
// wrapped it or turned it into a string).
type Probe struct {
	s   *Schema
	err error
}

// NewProbe returns a Probe of s.
func NewProbe(s *Schema) *Probe { return &Probe{s: s} }

// Err returns the error of the last check, nil if it passed or none ran.
func (p *Probe) Err() error { return p.err }

// Reset does nothing: a Probe holds no fields (proto.Unmarshal calls it).
func (p *Probe) Reset() {}

// ProtoReflect returns the Probe as a protoreflect.Message: an empty
// message's, whose unmarshal method is the check.
func (p *Probe) ProtoReflect() protoreflect.Message {
	return probeMessage{Message: (&emptypb.Empty{}).ProtoReflect(), p: p}
}

// probeMessage is the protoreflect.Message of a Probe: protobuf-go's
// decoder calls its unmarshal method, which checks the bytes.
type probeMessage struct {
	protoreflect.Message
	p *Probe
}

// Interface returns the Probe.
func (m probeMessage) Interface() protoreflect.ProtoMessage { return m.p }

// ProtoMethods returns the methods through which protobuf-go decodes
// into the Probe.
func (m probeMessage) ProtoMethods() *protoiface.Methods {
	return &protoiface.Methods{Unmarshal: m.unmarshal}
}

// unmarshal checks in.Buf.
func (m probeMessage) unmarshal(in protoiface.UnmarshalInput) (protoiface.UnmarshalOutput, error) {
	m.p.err = m.p.s.Check(in.Buf)
	return protoiface.UnmarshalOutput{Flags: protoiface.UnmarshalInitialized}, m.p.err
}
