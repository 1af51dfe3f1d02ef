//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"errors"
	"fmt"

	"github.com/nrikit/nrikit/internal/wirelimit"
	"github.com/tetratelabs/wazero/sys"

	"github.com/nrikit/nrikit/internal/wasmabi"
)

// Call runs the request export fn (such as [FuncConfigure] or
// EventFunc(api.Event_CREATE_CONTAINER)) with req, the protobuf
// encoding of its request, and returns the encoding of the response. ctx
// bounds the call, including the wait for a running call and the making
// of a fresh instance if the last was discarded. An answer larger than
// the export's bound ([Options.MaxAnswerSize] for events,
// [Options.MaxMessageSize] for the others) is not read: the call fails
// with KindOversize and the instance is kept. A failed call returns a
// *[CallError] (or [ErrClosed]).
func (p *Plugin) Call(ctx context.Context, fn string, req []byte) ([]byte, error) {
	if !wasmabi.IsFunc(fn) {
		return nil, fmt.Errorf("wasmhost: plugin %s: %q is not a request function of the ABI", p.name, fn)
	}
	select {
	case p.turn <- struct{}{}:
		defer func() {
			// A Close that gave up waiting for this call left the
			// instance to it.
			if p.closed.Load() && p.inst != nil {
				p.closeInstance(ctx, p.inst)
				p.inst = nil
			}
			<-p.turn
		}()
	case <-ctx.Done():
		return nil, &CallError{Plugin: p.name, Func: fn, Kind: KindTimeout, Err: fmt.Errorf("waiting for the previous call: %w", ctx.Err())}
	}
	if p.closed.Load() {
		return nil, ErrClosed
	}
	p.mem.enter()
	defer p.mem.exit()
	p.setCallContext(ctx)
	if p.inst == nil {
		if err := p.renew(ctx, fn); err != nil {
			return nil, err
		}
	}
	return p.call(ctx, fn, req)
}

// renew makes a fresh instance for a call of fn and lets Reinit prepare
// it.
func (p *Plugin) renew(ctx context.Context, fn string) error {
	inst, err := p.instantiate(ctx)
	if err != nil {
		return &CallError{Plugin: p.name, Func: fn, Kind: KindInit, Err: err}
	}
	p.inst = inst
	p.log.Info("made a fresh WASM plugin instance", "generation", p.Generation())
	if p.opts.Reinit == nil {
		return nil
	}
	if err := p.opts.Reinit(ctx, p.call); err != nil {
		p.discard(ctx)
		return &CallError{Plugin: p.name, Func: fn, Kind: KindInit, Discarded: true, Err: fmt.Errorf("re-initialising a fresh instance: %w", err)}
	}
	return nil
}

// call runs fn on the current instance (the caller holds the turn).
func (p *Plugin) call(ctx context.Context, fn string, req []byte) ([]byte, error) {
	inst := p.inst
	if inst == nil {
		return nil, &CallError{Plugin: p.name, Func: fn, Kind: KindInit, Err: errors.New("no instance")}
	}
	export := inst.fns[fn]
	if export == nil {
		return nil, fmt.Errorf("wasmhost: plugin %s: %q is not a request function of the ABI", p.name, fn)
	}
	mem := inst.mod.Memory()
	var reqPtr uint64
	if len(req) > 0 {
		res, err := inst.malloc.Call(ctx, uint64(len(req)))
		if err != nil {
			return nil, p.fail(ctx, fn, "malloc", err)
		}
		reqPtr = res[0]
		if reqPtr == 0 || !mem.Write(uint32(reqPtr), req) {
			return nil, p.abi(ctx, fn, fmt.Errorf("malloc(%d) returned %#x, outside the guest's %d bytes of memory", len(req), reqPtr, mem.Size()))
		}
	}
	res, err := export.Call(ctx, reqPtr, uint64(len(req)))
	if err != nil {
		return nil, p.fail(ctx, fn, fn, err)
	}
	ptr, size, isErr := wasmabi.ParseAnswer(res[0])
	if size > 0 && uint64(ptr)+uint64(size) > uint64(mem.Size()) {
		return nil, p.abi(ctx, fn, fmt.Errorf("answer (%#x, %d) outside the guest's %d bytes of memory", ptr, size, mem.Size()))
	}
	// An answer (or error string) above the call's bound is not read:
	// the guest may answer with its whole memory.
	limit := p.opts.answerLimit(fn)
	var out []byte
	if size > 0 && int(size) <= limit {
		view, _ := mem.Read(ptr, size)
		out = append([]byte(nil), view...)
	}
	// Free the answer, then the request, as upstream's host does.
	for _, buf := range []uint64{uint64(ptr), reqPtr} {
		if buf == 0 {
			continue
		}
		if _, err := inst.free.Call(ctx, buf); err != nil {
			return nil, p.fail(ctx, fn, "free", err)
		}
	}
	if int(size) > limit {
		return nil, &CallError{Plugin: p.name, Func: fn, Kind: KindOversize, Err: &wirelimit.SizeError{Size: int(size), Limit: limit}}
	}
	if isErr {
		return nil, &CallError{Plugin: p.name, Func: fn, Kind: KindGuest, Message: string(out)}
	}
	return out, nil
}

// answerLimit returns the largest answer accepted from the export fn.
func (o *Options) answerLimit(fn string) int {
	limit := o.MaxMessageSize
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	if fn == FuncConfigure || fn == FuncSynchronize || fn == FuncShutdown || o.MaxAnswerSize <= 0 {
		return limit
	}
	return min(o.MaxAnswerSize, limit)
}

// fail classifies the error of calling export what during a call of fn
// and discards the instance.
func (p *Plugin) fail(ctx context.Context, fn, what string, err error) error {
	e := &CallError{Plugin: p.name, Func: fn, Kind: KindTrap, Discarded: true}
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit) && (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled):
		e.Kind = KindTimeout
	case ctx.Err() != nil:
		e.Kind = KindTimeout
	case errors.As(err, &exit):
		e.Exited, e.ExitCode = true, exit.ExitCode()
	}
	var pages uint32
	if mem := p.inst.mod.Memory(); mem != nil {
		pages = mem.Size() / 65536
	}
	if what != fn {
		err = fmt.Errorf("%s: %w", what, err)
	}
	e.Err = fmt.Errorf("%w (memory %d of %d pages)", err, pages, p.opts.memoryLimit())
	p.discard(ctx)
	p.log.Warn("WASM plugin call failed; instance discarded", "function", fn, "kind", e.Kind.String(), "error", e.Err)
	return e
}

// abi reports a guest that broke the ABI and discards its instance.
func (p *Plugin) abi(ctx context.Context, fn string, err error) error {
	p.discard(ctx)
	p.log.Warn("WASM plugin broke the ABI; instance discarded", "function", fn, "error", err)
	return &CallError{Plugin: p.name, Func: fn, Kind: KindABI, Discarded: true, Err: err}
}

// discard closes the current instance.
func (p *Plugin) discard(ctx context.Context) {
	if p.inst == nil {
		return
	}
	p.closeInstance(ctx, p.inst)
	p.inst = nil
	p.flush()
}
