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
// calls the export that serves it (see [Plugin.CallMessage]). The events'
// methods are generated from the event table (events_generated.go).
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

// StateChange calls plugin_state_change.
func (c *Client) StateChange(ctx context.Context, req *api.StateChangeEvent) (*api.Empty, error) {
	return invoke(ctx, c, wasmabi.FuncStateChange, req, &api.Empty{})
}
