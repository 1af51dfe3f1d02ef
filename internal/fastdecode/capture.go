package fastdecode

import (
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/fastdecode/capturepb"
	"google.golang.org/protobuf/proto"
)

// NewCapture is for callers that cannot hand Unmarshal the bytes of a
// request, only have them decoded into a message of their choice (a
// ttrpc handler's unmarshal function). It returns an empty message to
// decode the bytes of m into, and finish, which then decodes what was
// captured into m as Unmarshal would have decoded the bytes. Capturing
// costs about one copy of the bytes: a SynchronizeRequest is captured as
// one exactly sized copy per pod and container (capturepb.Synchronize),
// which the decoded strings then share,
// any other supported type as unknown fields of an empty message. For a
// type without a fast path (see Supports) capture is nil: decode into m
// directly.
func NewCapture(m proto.Message) (capture proto.Message, finish func() error) {
	if !Supports(m) {
		return nil, nil
	}
	if x, ok := m.(*api.SynchronizeRequest); ok {
		c := &capturepb.Synchronize{}
		return c, func() error { return finishSynchronize(c, x) }
	}
	c := &api.Empty{}
	return c, func() error { return Unmarshal(c.ProtoReflect().GetUnknown(), m) }
}

// finishSynchronize decodes a captured SynchronizeRequest into x. The
// capture has the request's field numbers, its fields 1 and 2 as bytes
// (a length-delimited field of another wire type is an unknown field in
// both, and bool decodes as in the request), so the result is what
// decoding the request's bytes gives.
//
// Each captured pod and container is an exact copy that nothing else
// references and nothing writes to: the strings decoded from it point
// into it (UnmarshalOptions.owned) instead of being copied again: one
// allocation per string fewer.
func finishSynchronize(c *capturepb.Synchronize, x *api.SynchronizeRequest) error {
	x.Reset()
	owned := UnmarshalOptions{owned: true}
	if len(c.Pods) > 0 {
		x.Pods = make([]*api.PodSandbox, len(c.Pods))
		for i, b := range c.Pods {
			x.Pods[i] = &api.PodSandbox{}
			if err := owned.decodePod(b, x.Pods[i]); err != nil {
				return err
			}
		}
	}
	if len(c.Containers) > 0 {
		x.Containers = make([]*api.Container, len(c.Containers))
		for i, b := range c.Containers {
			x.Containers[i] = &api.Container{}
			if err := owned.decodeContainer(b, x.Containers[i]); err != nil {
				return err
			}
		}
	}
	x.More = c.More
	if u := c.ProtoReflect().GetUnknown(); len(u) > 0 {
		x.ProtoReflect().SetUnknown(u)
	}
	return nil
}
