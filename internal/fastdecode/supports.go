package fastdecode

import (
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// Supports reports whether Unmarshal has a fast path for m's type (a
// non-nil message of one of the types listed in the package
// documentation); for any other message Unmarshal is proto.Unmarshal, and
// a caller that must first get hold of the bytes can skip that.
func Supports(m proto.Message) bool {
	switch x := m.(type) {
	case *api.SynchronizeRequest:
		return x != nil
	case *api.PodSandbox:
		return x != nil
	case *api.Container:
		return x != nil
	case *api.CreateContainerRequest:
		return x != nil
	case *api.RunPodSandboxRequest:
		return x != nil
	case *api.StopPodSandboxRequest:
		return x != nil
	case *api.RemovePodSandboxRequest:
		return x != nil
	case *api.PostUpdatePodSandboxRequest:
		return x != nil
	case *api.PostCreateContainerRequest:
		return x != nil
	case *api.StartContainerRequest:
		return x != nil
	case *api.PostStartContainerRequest:
		return x != nil
	case *api.StopContainerRequest:
		return x != nil
	case *api.RemoveContainerRequest:
		return x != nil
	case *api.PostUpdateContainerRequest:
		return x != nil
	}
	return false
}
