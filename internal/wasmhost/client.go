package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
	"github.com/nrikit/nrikit/internal/wirelimit"
	"google.golang.org/protobuf/proto"
)

// DecodeError is an answer of the guest that is not the protobuf
// encoding of the expected response. The instance is kept: the guest
// answered, wrongly.
type DecodeError struct {
	// Plugin and Func name the plugin and the export called.
	Plugin, Func string
	// Err is protobuf's error, or the check's (wrapping
	// wirelimit.ErrMalformed).
	Err error
}

// Error implements the error interface.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("wasmhost: plugin %s: %s: undecodable answer: %v", e.Plugin, e.Func, e.Err)
}

// Unwrap returns protobuf's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// CallMessage calls the request export fn (such as [FuncConfigure], or
// the export a caller looked up once for its method with
// wasmabi.MethodFunc) with req, encoded with protobuf, and decodes the
// answer into rsp. An empty answer (a guest that could not encode or
// decode reports that way, see the ABI) leaves rsp empty. Errors are
// those of [Plugin.Call], or a *[DecodeError].
func (p *Plugin) CallMessage(ctx context.Context, fn string, req, rsp proto.Message) error {
	buf, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("wasmhost: encoding the %s request: %w", fn, err)
	}
	return p.CallEncoded(ctx, fn, buf, rsp)
}

// CallEncoded is [Plugin.CallMessage] with the request already encoded:
// req is copied into the guest's memory and not used once CallEncoded
// has returned.
func (p *Plugin) CallEncoded(ctx context.Context, fn string, req []byte, rsp proto.Message) error {
	out, err := p.Call(ctx, fn, req)
	if err != nil {
		return err
	}
	return p.decodeAnswer(fn, out, rsp)
}

// answerSchemas are wirelimit's bounds on the answers of the request
// functions, by function; made on first use, as wirelimit compiles its
// schemas on first use (a runtime without WASM plugins never needs them).
var answerSchemas = sync.OnceValue(func() map[string]*wirelimit.Schema {
	m := map[string]*wirelimit.Schema{}
	methods := []string{"Configure", "Synchronize", "Shutdown", "StateChange"}
	for _, e := range api.Events() {
		methods = append(methods, e.Name())
	}
	for _, method := range methods {
		if s := wirelimit.Answer(method); s != nil {
			m[wasmabi.MethodFunc(method)] = s
		}
	}
	return m
})

// DecodeAnswer decodes out, the guest's answer to the Plugin service
// method named method, into rsp, after checking it against what the host
// decodes from one message (wirelimit.Answer: the updates, evictions and
// values it holds): an answer above those bounds is not decoded and fails
// with a *[CallError] of KindOversize, wrapping the *wirelimit.LimitError;
// an undecodable answer with a *[DecodeError].
func (p *Plugin) DecodeAnswer(method string, out []byte, rsp proto.Message) error {
	return p.decodeAnswer(wasmabi.MethodFunc(method), out, rsp)
}

// decodeAnswer is DecodeAnswer for the answer of the request function fn.
func (p *Plugin) decodeAnswer(fn string, out []byte, rsp proto.Message) error {
	if s := answerSchemas()[fn]; s != nil {
		var lerr *wirelimit.LimitError
		switch err := s.Check(out); {
		case errors.As(err, &lerr):
			return &CallError{Plugin: p.Name(), Func: fn, Kind: KindOversize, Err: err}
		case err != nil:
			return &DecodeError{Plugin: p.Name(), Func: fn, Err: err}
		}
	}
	if err := proto.Unmarshal(out, rsp); err != nil {
		return &DecodeError{Plugin: p.Name(), Func: fn, Err: err}
	}
	return nil
}

// Client is the [api.PluginService] of a loaded plugin: each method
// calls the export that serves it (see [Plugin.CallMessage]).
type Client struct {
	p *Plugin
}

// NewClient returns the PluginService of p.
func NewClient(p *Plugin) *Client { return &Client{p: p} }

var _ api.PluginService = (*Client)(nil)

// invoke calls the export fn with req and returns the answer.
func invoke[Rsp proto.Message](ctx context.Context, c *Client, fn string, req proto.Message, rsp Rsp) (Rsp, error) {
	if err := c.p.CallMessage(ctx, fn, req, rsp); err != nil {
		var zero Rsp
		return zero, err
	}
	return rsp, nil
}

// Configure calls plugin_configure.
func (c *Client) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return invoke(ctx, c, wasmabi.FuncConfigure, req, &api.ConfigureResponse{})
}

// Synchronize calls plugin_synchronize.
func (c *Client) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return invoke(ctx, c, wasmabi.FuncSynchronize, req, &api.SynchronizeResponse{})
}

// Shutdown calls plugin_shutdown.
func (c *Client) Shutdown(ctx context.Context, req *api.Empty) (*api.Empty, error) {
	return invoke(ctx, c, wasmabi.FuncShutdown, req, &api.Empty{})
}

// RunPodSandbox calls plugin_run_pod_sandbox.
func (c *Client) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return invoke(ctx, c, wasmabi.FuncRunPod, req, &api.RunPodSandboxResponse{})
}

// UpdatePodSandbox calls plugin_update_pod_sandbox.
func (c *Client) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return invoke(ctx, c, wasmabi.FuncUpdatePod, req, &api.UpdatePodSandboxResponse{})
}

// PostUpdatePodSandbox calls plugin_post_update_pod_sandbox.
func (c *Client) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return invoke(ctx, c, wasmabi.FuncPostUpdatePod, req, &api.PostUpdatePodSandboxResponse{})
}

// StopPodSandbox calls plugin_stop_pod_sandbox.
func (c *Client) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return invoke(ctx, c, wasmabi.FuncStopPod, req, &api.StopPodSandboxResponse{})
}

// RemovePodSandbox calls plugin_remove_pod_sandbox.
func (c *Client) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return invoke(ctx, c, wasmabi.FuncRemovePod, req, &api.RemovePodSandboxResponse{})
}

// CreateContainer calls plugin_create_container.
func (c *Client) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return invoke(ctx, c, wasmabi.FuncCreateContainer, req, &api.CreateContainerResponse{})
}

// PostCreateContainer calls plugin_post_create_container.
func (c *Client) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return invoke(ctx, c, wasmabi.FuncPostCreate, req, &api.PostCreateContainerResponse{})
}

// StartContainer calls plugin_start_container.
func (c *Client) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return invoke(ctx, c, wasmabi.FuncStartContainer, req, &api.StartContainerResponse{})
}

// PostStartContainer calls plugin_post_start_container.
func (c *Client) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return invoke(ctx, c, wasmabi.FuncPostStart, req, &api.PostStartContainerResponse{})
}

// UpdateContainer calls plugin_update_container.
func (c *Client) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return invoke(ctx, c, wasmabi.FuncUpdateContainer, req, &api.UpdateContainerResponse{})
}

// PostUpdateContainer calls plugin_post_update_container.
func (c *Client) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return invoke(ctx, c, wasmabi.FuncPostUpdate, req, &api.PostUpdateContainerResponse{})
}

// StopContainer calls plugin_stop_container.
func (c *Client) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return invoke(ctx, c, wasmabi.FuncStopContainer, req, &api.StopContainerResponse{})
}

// RemoveContainer calls plugin_remove_container.
func (c *Client) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return invoke(ctx, c, wasmabi.FuncRemoveContainer, req, &api.RemoveContainerResponse{})
}

// StateChange calls plugin_state_change.
func (c *Client) StateChange(ctx context.Context, req *api.StateChangeEvent) (*api.Empty, error) {
	return invoke(ctx, c, wasmabi.FuncStateChange, req, &api.Empty{})
}

// ValidateContainerAdjustment calls plugin_validate_container_adjustment.
func (c *Client) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return invoke(ctx, c, wasmabi.FuncValidate, req, &api.ValidateContainerAdjustmentResponse{})
}
