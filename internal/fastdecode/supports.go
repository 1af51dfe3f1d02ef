package fastdecode

import "google.golang.org/protobuf/proto"

// Supports reports whether Unmarshal has a fast path for m's type (a
// non-nil message of one of the types listed in the package
// documentation); for any other message Unmarshal is proto.Unmarshal, and
// a caller that must first get hold of the bytes can skip that.
func Supports(m proto.Message) bool {
	ok, _ := UnmarshalOptions{}.fastPath(m, nil, false)
	return ok
}
