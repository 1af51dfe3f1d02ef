//go:build !wasip1

package wasmguest

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/handler"
)

// TestObserveOnly checks that WithObserveOnly and a declaration of
// ObserveOnly send observe_only with the Configure response, and that
// nothing else does.
func TestObserveOnly(t *testing.T) {
	for i, opts := range [][]Option{nil, {WithObserveOnly()}, {WithDeclarations(handler.Declarations{ObserveOnly: true})}} {
		observe := i > 0
		g, err := New(&everything{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		rsp := &api.ConfigureResponse{}
		if err := handle(t, g, FuncConfigure, &api.ConfigureRequest{NRIVersion: api.NRIVersion}, rsp); err != nil {
			t.Fatal(err)
		}
		if rsp.GetObserveOnly() != observe {
			t.Errorf("options %d: observe_only %v, want %v", i, rsp.GetObserveOnly(), observe)
		}
	}
}
