package builtin

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/nri/pkg/api"
)

// TestBuiltinPlugin: the plugin subscribes to the events it has handlers
// for unless Configure says otherwise, relays events to its handlers, and
// turns a validator's error into a rejection.
func TestBuiltinPlugin(t *testing.T) {
	ctx := context.Background()
	var created int
	p := &BuiltinPlugin{Base: "b", Index: "10", Handlers: BuiltinHandlers{
		CreateContainer: func(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
			created++
			return nil, nil
		},
		ValidateContainerAdjustment: func(context.Context, *api.ValidateContainerAdjustmentRequest) error {
			return errors.New("no")
		},
	}}
	rsp, err := p.Configure(ctx, &api.ConfigureRequest{})
	want := api.EventMask(0).Set(api.Event_CREATE_CONTAINER, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	if err != nil || api.EventMask(rsp.Events) != want {
		t.Errorf("Configure = %v, %v; want events %v", rsp, err, want)
	}
	if rsp, err := p.CreateContainer(ctx, &api.CreateContainerRequest{}); err != nil || rsp == nil || created != 1 {
		t.Errorf("CreateContainer = %v, %v (handler called %d times)", rsp, err, created)
	}
	if rsp, err := p.StartContainer(ctx, &api.StartContainerRequest{}); err != nil || rsp == nil {
		t.Errorf("StartContainer without handler = %v, %v; want an empty answer", rsp, err)
	}
	if rsp, err := p.ValidateContainerAdjustment(ctx, &api.ValidateContainerAdjustmentRequest{}); err != nil || !rsp.Reject || rsp.Reason != "no" {
		t.Errorf("ValidateContainerAdjustment = %v, %v; want a rejection with the reason", rsp, err)
	}
	p.Handlers.Configure = func(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
		return &api.ConfigureResponse{Events: int32(api.Event_CREATE_CONTAINER.Mask())}, nil
	}
	if rsp, err := p.Configure(ctx, &api.ConfigureRequest{}); err != nil || api.EventMask(rsp.Events) != api.Event_CREATE_CONTAINER.Mask() {
		t.Errorf("Configure with a subscribing handler = %v, %v", rsp, err)
	}
}
