package adaptation

import (
	"context"
	"net"
	"runtime"
	"sync"
	"testing"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/nriconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// rawPeer is a plugin that speaks the protocol directly over an in-memory
// connection, for the tests of what the runtime does with what a plugin
// sends: its Plugin service answers each method with what answer returns
// (nil: an empty answer), and Runtime is a client of the runtime's
// Runtime service.
type rawPeer struct {
	Runtime api.RuntimeService

	mu     sync.Mutex
	answer func(method string) (proto.Message, error)
	lay    *nriconn.Layout
}

// connectRaw connects a rawPeer named idx-name to a, registers it and
// waits until the runtime has registered it (or refused it: the error).
func connectRaw(t *testing.T, a *Adaptation, idx, name string, answer func(method string) (proto.Message, error)) (*rawPeer, error) {
	t.Helper()
	rtEnd, plEnd := net.Pipe()
	lay, err := nriconn.New(plEnd, nriconn.PluginRole, nil)
	must(t, err)
	r := &rawPeer{answer: answer, lay: lay}
	r.register(lay.Server)
	go lay.Server.Serve(context.Background(), lay.Listener)
	client := ttrpc.NewClient(lay.ClientConn)
	r.Runtime = api.NewRuntimeClient(client)
	t.Cleanup(func() {
		client.Close()
		lay.Mux.Close()
	})
	served := make(chan error, 1)
	go func() { served <- a.ServeConn(context.Background(), rtEnd) }()
	if _, err := r.Runtime.RegisterPlugin(ctxT(t), &api.RegisterPluginRequest{PluginName: name, PluginIdx: idx}); err != nil {
		return r, err
	}
	return r, <-served
}

// register serves the Plugin service on srv, every method answering what
// r.answer says.
func (r *rawPeer) register(srv *ttrpc.Server) {
	methods := map[string]ttrpc.Method{}
	sd := api.File_nrikit_nri_proto.Services().ByName("Plugin")
	for i := range sd.Methods().Len() {
		md := sd.Methods().Get(i)
		name := string(md.Name())
		out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err != nil {
			panic(err)
		}
		methods[name] = func(_ context.Context, unmarshal func(any) error) (any, error) {
			in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
			if err != nil {
				return nil, err
			}
			req := in.New().Interface()
			if err := unmarshal(req); err != nil {
				return nil, err
			}
			r.mu.Lock()
			answer := r.answer
			r.mu.Unlock()
			var rsp proto.Message
			if answer != nil {
				if rsp, err = answer(name); err != nil {
					return nil, err
				}
			}
			if rsp == nil {
				rsp = out.New().Interface()
			}
			if name == "Synchronize" {
				// Echo more, as the protocol asks.
				more := req.(*api.SynchronizeRequest).GetMore()
				rsp.ProtoReflect().Set(rsp.ProtoReflect().Descriptor().Fields().ByName("more"), protoreflect.ValueOfBool(more))
			}
			return rsp, nil
		}
	}
	srv.RegisterService(api.PluginServiceName, &ttrpc.ServiceDesc{Methods: methods})
}

// rawAnswer returns an empty message of m's type whose encoding is raw
// (set as its unknown fields, which proto.Marshal writes as they are).
func rawAnswer(m proto.Message, raw []byte) proto.Message {
	m.ProtoReflect().SetUnknown(raw)
	return m
}

// heapAllocated returns the bytes allocated on the heap so far.
func heapAllocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}
