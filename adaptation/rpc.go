package adaptation

import (
	"context"

	"github.com/nrikit/nrikit/adaptation/internal/wire"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The descriptors of the calls the Adaptation makes to plugins: what
// every endpoint needs to make a call (method), and what the dispatcher
// (dispatch.go) needs to deliver an event and judge its plugins'
// failures (rpc).

// method is one Plugin service method as endpoints call it: by name over
// a connection, in-process through serve.
type method struct {
	name string
	// wasm is the export of the WASM ABI that serves the method
	// (docs/wasm-abi.md), looked up once here rather than on every call.
	wasm string
	// answer is the type of the method's answer, to decode it into.
	answer protoreflect.MessageType
	serve  func(api.PluginService, context.Context, proto.Message) (proto.Message, error)
}

// newMethod describes the method call of api.PluginService, named name.
func newMethod[Req, Rsp proto.Message](name string, call func(api.PluginService, context.Context, Req) (Rsp, error)) *method {
	var rsp Rsp
	return &method{name: name, wasm: wasmabi.MethodFunc(name), answer: rsp.ProtoReflect().Type(),
		serve: func(svc api.PluginService, ctx context.Context, req proto.Message) (proto.Message, error) {
			r, _ := req.(Req)
			return call(svc, ctx, r)
		}}
}

// methodStateChange is the method of the StateChange fallback.
var methodStateChange = newMethod("StateChange", api.PluginService.StateChange)

// rpc describes how one event is sent to a plugin and how its plugins'
// failures count. The values below are immutable descriptors; adding an
// event means adding one of them and one thin public method. What the
// protocol says of the event (its StateChange fallback, whether it
// validates) comes from its row of the event table (api.EventInfo).
type rpc[Req, Rsp proto.Message] struct {
	event  api.Event
	method *method
	flags  rpcFlags
}

// rpcFlags are the properties of an event that are not its types: the
// protocol's, from the event table (newRPC), and the runtime's own.
type rpcFlags uint8

const (
	// viaStateChange sends the event as a StateChangeEvent with the
	// request's pod and container to a plugin that does not implement
	// the dedicated RPC (as upstream's runtime does for the events whose
	// answer carries nothing).
	viaStateChange rpcFlags = 1 << iota
	// requiredAnswer is set for the events a required plugin must
	// answer (RunPodSandbox and CreateContainer, see required.go): its
	// failure, or its absence when its turn comes, fails the event
	// whatever its failure policy (judge).
	requiredAnswer
	// failClosed is set for the events any failure of a plugin fails,
	// whatever its failure policy: validation.
	failClosed
	// tellAll is set for the mutating events of a teardown
	// (StopContainer): a plugin's error does not keep the later plugins
	// from the event; the first error is returned once all have answered
	// (containerd/nri#286: Stop errors must not block teardown, and later
	// plugins are still told).
	tellAll
)

// has reports whether r has all of flags.
func (r *rpc[Req, Rsp]) has(flags rpcFlags) bool { return r.flags&flags == flags }

// newRPC describes event e, sent with call (the method of the same name),
// with flags and those of the event table's row of e: viaStateChange for
// an event with the StateChange fallback, failClosed for validation.
func newRPC[Req, Rsp proto.Message](e api.Event, call func(api.PluginService, context.Context, Req) (Rsp, error), flags rpcFlags) *rpc[Req, Rsp] {
	info := e.Info()
	if info.StateChange {
		flags |= viaStateChange
	}
	if info.Kind == api.EventValidating {
		flags |= failClosed
	}
	return &rpc[Req, Rsp]{event: e, method: newMethod(info.Name, call), flags: flags}
}

// stateChange is req as the StateChangeEvent of the StateChange fallback
// (viaStateChange).
func (r *rpc[Req, Rsp]) stateChange(req Req) *api.StateChangeEvent {
	ev := &api.StateChangeEvent{Event: r.event}
	if o, ok := any(req).(interface{ GetPod() *api.PodSandbox }); ok {
		ev.Pod = o.GetPod()
	}
	if o, ok := any(req).(interface{ GetContainer() *api.Container }); ok {
		ev.Container = o.GetContainer()
	}
	return ev
}

// send makes the call m with req to the plugin at ep (see endpoint.call)
// and returns its answer as the method's answer type Rsp.
func send[Rsp proto.Message](ctx context.Context, ep endpoint, m *method, req proto.Message, sh *wire.Shared) (Rsp, error) {
	out, err := ep.call(ctx, m, req, sh)
	rsp, _ := out.(Rsp)
	return rsp, err
}

// svc shortens the table below.
type svc = api.PluginService

var (
	rpcRunPodSandbox        = newRPC(api.Event_RUN_POD_SANDBOX, svc.RunPodSandbox, requiredAnswer)
	rpcUpdatePodSandbox     = newRPC(api.Event_UPDATE_POD_SANDBOX, svc.UpdatePodSandbox, 0)
	rpcPostUpdatePodSandbox = newRPC(api.Event_POST_UPDATE_POD_SANDBOX, svc.PostUpdatePodSandbox, 0)
	rpcStopPodSandbox       = newRPC(api.Event_STOP_POD_SANDBOX, svc.StopPodSandbox, 0)
	rpcRemovePodSandbox     = newRPC(api.Event_REMOVE_POD_SANDBOX, svc.RemovePodSandbox, 0)
	rpcCreateContainer      = newRPC(api.Event_CREATE_CONTAINER, svc.CreateContainer, requiredAnswer)
	rpcPostCreateContainer  = newRPC(api.Event_POST_CREATE_CONTAINER, svc.PostCreateContainer, 0)
	rpcStartContainer       = newRPC(api.Event_START_CONTAINER, svc.StartContainer, 0)
	rpcPostStartContainer   = newRPC(api.Event_POST_START_CONTAINER, svc.PostStartContainer, 0)
	rpcUpdateContainer      = newRPC(api.Event_UPDATE_CONTAINER, svc.UpdateContainer, 0)
	rpcPostUpdateContainer  = newRPC(api.Event_POST_UPDATE_CONTAINER, svc.PostUpdateContainer, 0)
	rpcStopContainer        = newRPC(api.Event_STOP_CONTAINER, svc.StopContainer, tellAll)
	rpcRemoveContainer      = newRPC(api.Event_REMOVE_CONTAINER, svc.RemoveContainer, 0)
	rpcValidate             = newRPC(api.Event_VALIDATE_CONTAINER_ADJUSTMENT, svc.ValidateContainerAdjustment, requiredAnswer)
)
