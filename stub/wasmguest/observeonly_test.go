package wasmguest

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestObserveOnly checks that WithObserveOnly sends observe_only with the
// Configure response, and that nothing else does.
func TestObserveOnly(t *testing.T) {
	for _, observe := range []bool{false, true} {
		var opts []Option
		if observe {
			opts = append(opts, WithObserveOnly())
		}
		g, err := New(&everything{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		rsp := &api.ConfigureResponse{}
		if err := handle(t, g, FuncConfigure, &api.ConfigureRequest{NRIVersion: api.NRIVersion}, rsp); err != nil {
			t.Fatal(err)
		}
		if rsp.GetObserveOnly() != observe {
			t.Errorf("WithObserveOnly %v: observe_only %v", observe, rsp.GetObserveOnly())
		}
	}
}
