package stub

import (
	"context"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/fastdecode"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fastDecoding is the ttrpc server interceptor through which the stub
// decodes the requests that carry pods and containers (every event and
// Synchronize) with [fastdecode.Unmarshal] instead of proto.Unmarshal:
// decoding is most of a plugin's CPU per event, and most of the time a
// plugin takes to receive the runtime's snapshot. The result is the same
// message. ttrpc hands handlers a function that decodes the request, not
// its bytes, so the bytes are taken through a capture message (see
// fastdecode.NewCapture).
//
// A SynchronizeRequest is only captured, and its more field read: its
// pods and containers are decoded by the dispatcher (see syncparts.go),
// to which the interceptor hands the decoding through the context.
func fastDecoding(ctx context.Context, unmarshal ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, method ttrpc.Method) (any, error) {
	var part *deferredPart // only Synchronize's context carries one: events pay nothing
	if info != nil && info.FullMethod == synchronizeMethod {
		part = &deferredPart{}
		ctx = withDeferredPart(ctx, part)
	}
	return method(ctx, func(obj any) error {
		if x, ok := obj.(*api.SynchronizeRequest); ok && x != nil && part != nil {
			return captureSynchronize(unmarshal, x, part)
		}
		m, ok := obj.(proto.Message)
		if !ok {
			return unmarshal(obj)
		}
		capture, finish := fastdecode.NewCapture(m)
		if capture == nil {
			return unmarshal(obj)
		}
		if err := unmarshal(capture); err != nil {
			return err
		}
		if err := finish(); err != nil {
			// As ttrpc reports a request it cannot decode.
			return status.Errorf(codes.Internal, "stub: decoding %s: %v", m.ProtoReflect().Descriptor().Name(), err)
		}
		return nil
	})
}

// synchronizeMethod is the ttrpc method name of Synchronize requests.
const synchronizeMethod = "/" + api.PluginServiceName + "/Synchronize"

// captureSynchronize captures the bytes of a SynchronizeRequest into x and
// sets x.More; part.decode then decodes the rest into x. If the bytes are
// malformed at the top level they are decoded at once, to fail as ttrpc
// reports a request it cannot decode.
func captureSynchronize(unmarshal ttrpc.Unmarshaler, x *api.SynchronizeRequest, part *deferredPart) error {
	capture, more, finish := fastdecode.CaptureSynchronize(x)
	if err := unmarshal(capture); err != nil {
		return err
	}
	m, err := more()
	if err != nil {
		if ferr := finish(); ferr != nil {
			err = ferr // the decoder's error says more
		}
		return decodeStatus(err)
	}
	x.More = m
	part.decode = finish
	return nil
}

// serverOptions returns the ttrpc server options of a session: the
// plugin's (WithTTRPCOptions), then fast decoding, chained after any
// interceptor the plugin set.
func (c *config) serverOptions() []ttrpc.ServerOpt {
	opts := make([]ttrpc.ServerOpt, 0, len(c.serverOpts)+1)
	opts = append(opts, c.serverOpts...)
	return append(opts, ttrpc.WithChainUnaryServerInterceptor(fastDecoding))
}
