package wire

import (
	"context"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A request encoded by the runtime ([Shared.Encode], [EncodedSyncParts])
// is sent as ttrpc's payload as it is: [CallPayload] passes the bytes
// along in the call's context and [SendEncoded], an interceptor of the
// connection's ttrpc client, puts them in ttrpc's request, where ttrpc's
// codec would copy them into a new buffer first.

// CallPayload calls method of service through client with a request
// encoded as payload, the answer decoded into rsp. The client must have
// [SendEncoded] as its last unary interceptor. payload is not used once
// CallPayload has returned.
func CallPayload(ctx context.Context, client *ttrpc.Client, service, method string, payload []byte, rsp proto.Message) error {
	return client.Call(&encodedCtx{Context: ctx, method: method, payload: payload}, service, method, emptyRequest, rsp)
}

// emptyRequest is what ttrpc encodes for a request sent as encoded: no
// bytes. It is never written to.
var emptyRequest = &api.Empty{}

// OwnEncoding returns the bytes req marshals to if they are its unknown
// fields alone (a part of [EncodedSyncParts]).
func OwnEncoding(req proto.Message) ([]byte, bool) {
	r := req.ProtoReflect()
	if !r.IsValid() {
		return nil, false
	}
	enc := r.GetUnknown()
	if len(enc) == 0 {
		return nil, false
	}
	known := false
	r.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool {
		known = true
		return false
	})
	return enc, !known
}

// encodedKey is the context key of the encodedCtx of a call whose
// request is sent as encoded (CallPayload).
type encodedKey struct{}

// encodedCtx is the context of a call to method whose request is sent as
// payload: one allocation per call for the call's context and what
// SendEncoded needs.
type encodedCtx struct {
	context.Context
	method  string
	payload []byte
}

// Value returns c for encodedKey, the value of c's parent for another key.
func (c *encodedCtx) Value(key any) any {
	if _, ok := key.(encodedKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// SendEncoded is the ttrpc client interceptor of a plugin connection
// that puts the encoding [CallPayload] passes along as the payload of
// the call it was made for. The payload is taken out of ttrpc's request
// again when the call returns: the caller may reuse its buffer then.
func SendEncoded(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, _ *ttrpc.UnaryClientInfo, invoke ttrpc.Invoker) error {
	enc, ok := ctx.Value(encodedKey{}).(*encodedCtx)
	if !ok || enc.method != req.Method || len(req.Payload) != 0 {
		return invoke(ctx, req, rsp)
	}
	empty := req.Payload
	req.Payload = enc.payload
	err := invoke(ctx, req, rsp)
	req.Payload = empty
	return err
}
