package adaptation

import (
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// encodeValidation encodes a validation request as protobuf-go does
// (byte for byte: fields in order of number): its pod and container, the
// bulk of it, by hand (fields 1 and 2, as appendObjects encodes those of
// the requests made of a pod and a container), the rest (the combined
// adjustment and updates, the owners, the plugins) with protobuf-go,
// appended. ok is false for a request with unknown fields, which
// protobuf-go encodes.
func (s *shared) encodeValidation(v *api.ValidateContainerAdjustmentRequest) (enc []byte, ok bool) {
	if len(v.ProtoReflect().GetUnknown()) > 0 {
		return nil, false
	}
	enc, _, err := s.appendObjects(v.Pod, v.Container, false)
	if err != nil {
		return nil, false
	}
	rest := &api.ValidateContainerAdjustmentRequest{Adjust: v.Adjust, Update: v.Update, Owners: v.Owners, Plugins: v.Plugins}
	if enc, err = (proto.MarshalOptions{}).MarshalAppend(enc, rest); err != nil {
		return nil, false
	}
	return enc, true
}
