//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"errors"
	"time"

	"github.com/tetratelabs/wazero"
	wapi "github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/nrikit/nrikit/internal/wasmfuel"
)

// fuelBudget is the count of loop headers and function entries between
// two checks of a call's context by a module with Options.FuelChecks: at
// a few ns each, well under a millisecond; the host function costs
// about 0.1 µs, so under 0.1 % of a loop-heavy guest's time.
const fuelBudget = 1 << 16

// instantiateFuel defines the host function internal/wasmfuel's
// counters call: it stops the call if its context is done and refills
// the counter otherwise.
func instantiateFuel(ctx context.Context, r wazero.Runtime) error {
	refuel := func(ctx context.Context, stack []uint64) {
		stopIfDone(ctx)
		stack[0] = fuelBudget
	}
	_, err := r.NewHostModuleBuilder(wasmfuel.ImportModule).
		NewFunctionBuilder().
		WithGoFunction(wapi.GoFunc(refuel), nil, []wapi.ValueType{wapi.ValueTypeI32}).
		Export(wasmfuel.ImportName).
		Instantiate(ctx)
	return err
}

// stopIfDone stops the running call if ctx is done, as wazero's
// close-on-context-done does: by the exit error that wazero returns from
// the call (Plugin.fail classifies it as a timeout and discards the
// instance).
func stopIfDone(ctx context.Context) {
	switch err := ctx.Err(); {
	case err == nil:
	case errors.Is(err, context.Canceled):
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	default:
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
}

// setCallContext records the context of the call (or load) about to run
// (under the turn), for the guest's sleeps.
func (p *Plugin) setCallContext(ctx context.Context) { p.callCtx.Store(&ctx) }

// sleeper returns the guest's sleep (WASI poll_oneoff): slices of at
// most maxSleep, between which wazero's close-on-context-done stops a
// call whose context is done; with FuelChecks, which counts no sleeping,
// the sleep itself stops it.
func (p *Plugin) sleeper() func(ns int64) {
	if !p.opts.FuelChecks {
		return sleepSlice
	}
	return func(ns int64) {
		ctx := p.callCtx.Load()
		if ctx != nil {
			stopIfDone(*ctx)
		}
		time.Sleep(min(time.Duration(ns), maxSleep))
		if ctx != nil {
			stopIfDone(*ctx)
		}
	}
}
