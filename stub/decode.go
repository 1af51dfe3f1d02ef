package stub

import (
	"context"

	"github.com/containerd/ttrpc"
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
func fastDecoding(ctx context.Context, unmarshal ttrpc.Unmarshaler, _ *ttrpc.UnaryServerInfo, method ttrpc.Method) (any, error) {
	return method(ctx, func(obj any) error {
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

// serverOptions returns the ttrpc server options of a session: the
// plugin's (WithTTRPCOptions), then fast decoding, chained after any
// interceptor the plugin set.
func (c *config) serverOptions() []ttrpc.ServerOpt {
	opts := make([]ttrpc.ServerOpt, 0, len(c.serverOpts)+1)
	opts = append(opts, c.serverOpts...)
	return append(opts, ttrpc.WithChainUnaryServerInterceptor(fastDecoding))
}
