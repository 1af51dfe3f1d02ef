package fastdecode

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

func TestSupports(t *testing.T) {
	for _, tc := range []struct {
		m    proto.Message
		want bool
	}{
		{&api.SynchronizeRequest{}, true},
		{&api.PodSandbox{}, true},
		{&api.Container{}, true},
		{&api.CreateContainerRequest{}, true},
		{&api.RunPodSandboxRequest{}, true},
		{&api.StopPodSandboxRequest{}, true},
		{&api.RemovePodSandboxRequest{}, true},
		{&api.PostUpdatePodSandboxRequest{}, true},
		{&api.PostCreateContainerRequest{}, true},
		{&api.StartContainerRequest{}, true},
		{&api.PostStartContainerRequest{}, true},
		{&api.StopContainerRequest{}, true},
		{&api.RemoveContainerRequest{}, true},
		{&api.PostUpdateContainerRequest{}, true},
		{&api.LinuxPodSandbox{}, true},
		{&api.LinuxContainer{}, true},
		{&api.LinuxResources{}, true},
		{&api.LinuxMemory{}, false},
		{(*api.Container)(nil), false},
		{&api.ConfigureRequest{}, false},
		{&api.UpdateContainerRequest{}, false},
		{&api.StateChangeEvent{}, false},
		{nil, false},
	} {
		if got := Supports(tc.m); got != tc.want {
			t.Errorf("Supports(%T) = %v, want %v", tc.m, got, tc.want)
		}
	}
}
