//go:build !nri_no_wasm

package wasmhost

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/testing/testscale"
)

// TestFuelChecksBoundCalls: with FuelChecks, the guest answers as
// without, and an endless loop and an hour-long sleep are stopped within
// twice the timeout, discarding the instance.
func TestFuelChecksBoundCalls(t *testing.T) {
	var reinits atomic.Int32
	p, _ := load(t, Options{FuelChecks: true, Reinit: reinitWith(t, "again", &reinits)})
	configure(t, p, "first")
	rsp, err := createContainer(t, p, testscale.D(5*time.Second), "adjust")
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if v, _ := envOf(rsp.GetAdjust(), "WASM_GUEST"); v != "configured=first" {
		t.Errorf("WASM_GUEST=%q, want configured=first", v)
	}
	const timeout = 500 * time.Millisecond
	for i, name := range []string{"sleep", "loop"} {
		if i > 0 {
			// Renew the instance under a generous timeout: under
			// the race detector, _initialize alone can take longer
			// than the timeout below.
			if _, err := createContainer(t, p, testscale.D(30*time.Second), "adjust"); err != nil {
				t.Fatalf("CreateContainer after the timeout: %v", err)
			}
		}
		start := time.Now()
		_, err := createContainer(t, p, timeout, name)
		took := time.Since(start)
		var ce *CallError
		if !errors.As(err, &ce) || ce.Kind != KindTimeout || !ce.Discarded {
			t.Fatalf("%s: error %v, want a timeout discarding the instance", name, err)
		}
		if took > 2*timeout {
			t.Errorf("%s stopped after %v, want at most %v", name, took, 2*timeout)
		}
	}
	rsp, err = createContainer(t, p, testscale.D(5*time.Second), "adjust")
	if err != nil {
		t.Fatalf("CreateContainer after the timeouts: %v", err)
	}
	if v, _ := envOf(rsp.GetAdjust(), "WASM_GUEST"); v != "configured=again" {
		t.Errorf("fresh instance answered WASM_GUEST=%q, want configured=again", v)
	}
	if n := reinits.Load(); n != 2 {
		t.Errorf("Reinit calls = %d, want 2", n)
	}
}
