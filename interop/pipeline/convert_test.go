package pipeline

import (
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/interop/internal/protodiff"
)

// convert decodes src's wire encoding into dst.
func convert(src, dst proto.Message) error {
	_, err := protodiff.Convert(src, dst)
	return err
}
