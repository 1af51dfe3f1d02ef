package adaptation

import (
	"context"
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// clobberService changes every request it gets.
type clobberService struct{ api.PluginService }

func (clobberService) PostStartContainer(_ context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	req.Pod.Name = "changed"
	req.Container.Env = nil
	return &api.PostStartContainerResponse{}, nil
}

// TestBuiltinGetsClone checks that a builtin plugin cannot change the
// request the runtime passed on.
func TestBuiltinGetsClone(t *testing.T) {
	ep := newBuiltinEndpoint(clobberService{})
	defer ep.Close()
	req := &api.PostStartContainerRequest{Pod: testPod(1), Container: bigCtr(1)}
	want := proto.Clone(req)
	rsp, err := send[*api.PostStartContainerResponse](context.Background(), ep, rpcPostStartContainer.method, req, newShared())
	if err != nil || rsp == nil {
		t.Fatalf("call: %v, %v", rsp, err)
	}
	if !proto.Equal(req, want) {
		t.Error("the builtin plugin changed the runtime's request")
	}
}
