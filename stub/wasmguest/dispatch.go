package wasmguest

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/fastdecode"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// dispatch decodes the request of the export fn and hands it to the
// session's method serving it; the events' cases are generated from the
// event table (dispatchEvent, events_generated.go).
func (g *Guest) dispatch(ctx context.Context, fn string, b []byte, owned bool) (proto.Message, error) {
	s := g.s
	switch fn {
	case FuncConfigure:
		return serve(ctx, s, fn, b, owned, &api.ConfigureRequest{}, (*pcore.Session).Configure)
	case FuncSynchronize:
		return serve(ctx, s, fn, b, owned, &api.SynchronizeRequest{}, (*pcore.Session).Synchronize)
	case FuncShutdown:
		return serve(ctx, s, fn, b, owned, &api.Empty{}, (*pcore.Session).Shutdown)
	case FuncStateChange:
		return serve(ctx, s, fn, b, owned, &api.StateChangeEvent{}, (*pcore.Session).StateChange)
	}
	return dispatchEvent(ctx, s, fn, b, owned)
}

// serve decodes b into req and calls the session's method m with it.
func serve[Req, Rsp proto.Message](ctx context.Context, s *pcore.Session, fn string, b []byte, owned bool, req Req,
	m func(*pcore.Session, context.Context, Req) (Rsp, error)) (proto.Message, error) {
	if err := decode(fn, b, owned, req); err != nil {
		return nil, err
	}
	rsp, err := m(s, ctx, req)
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// decode unmarshals b into m with the hand-written decoders of the
// requests made of a pod and a container (as the stub does; protobuf-go's
// reflective decoder takes twice as long in a guest), trusting the host
// for UTF-8: the requests come from the runtime's encoder, which checks
// (protobuf-go's Marshal does), and in a guest every loop iteration costs
// an exit to the host (wazero's check for a stopped call), so checking the
// strings again would cost ~15% of a CreateContainer call. With owned, b
// is the guest's to keep and the strings point into it: in a guest an
// allocation is dear (a CreateContainer request of 2.4 KB has about 150
// strings), and a string a handler keeps keeps the request's buffer.
func decode(fn string, b []byte, owned bool, m proto.Message) error {
	if err := (fastdecode.UnmarshalOptions{TrustUTF8: true, OwnedInput: owned}).Unmarshal(b, m); err != nil {
		return fmt.Errorf("wasmguest: decoding the %s request: %w", fn, err)
	}
	return nil
}
