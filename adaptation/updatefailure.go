package adaptation

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// updateFailure is the error of an UpdateContainers request whose
// UpdateFunc failed. ttrpc sends no answer with an error, so the updates
// that failed go in the status's details, as an UpdateContainersResponse
// (docs/protocol.md, section 9): nrikit's stub returns them with the
// error, other plugins see the error alone. A list that would make the
// status larger than a message may be is left out.
func updateFailure(failed []*api.ContainerUpdate, err error) error {
	st := status.Newf(codes.Unknown, "runtime failed to update containers: %v", err)
	if len(failed) == 0 {
		return st.Err()
	}
	detail := &api.UpdateContainersResponse{Failed: failed}
	if proto.Size(detail)+len(st.Message()) > MaxMessageSize-statusSlack {
		return st.Err()
	}
	if withList, derr := st.WithDetails(detail); derr == nil {
		st = withList
	}
	return st.Err()
}

// statusSlack is room in a message for what wraps a status with details:
// ttrpc's envelope, the status's code and the detail's type URL.
const statusSlack = 1 << 10
