package cri

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
)

// hold is a handler that holds the first event of its kind until the
// check releases it or its budget (less than the runtime's request
// timeout) passes, so that the runtime never drops the plugin for it.
type hold struct {
	kind    api.Event
	budget  time.Duration
	reached chan *event
	release chan struct{}
	once    sync.Once

	mu    sync.Mutex
	ended time.Time // when the handler returned
}

func newHold(kind api.Event, budget time.Duration) *hold {
	return &hold{kind: kind, budget: budget, reached: make(chan *event, 1), release: make(chan struct{})}
}

// handle is the plugin's handler.
func (h *hold) handle(ctx context.Context, ev *event) (*answer, error) {
	if ev.Kind != h.kind {
		return nil, nil
	}
	select {
	case h.reached <- ev:
	default:
		return nil, nil // only the first is held
	}
	t := time.NewTimer(h.budget)
	defer t.Stop()
	select {
	case <-h.release:
	case <-t.C:
	case <-ctx.Done():
	}
	h.mu.Lock()
	h.ended = time.Now()
	h.mu.Unlock()
	return nil, nil
}

// wait waits until the hook is held and returns its event.
func (h *hold) wait(r *run) (*event, error) {
	ctx, cancel := r.within(registerTimeout)
	defer cancel()
	select {
	case ev := <-h.reached:
		h.reached <- ev // for later waits
		return ev, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no %s within %s", eventName(h.kind), registerTimeout)
	}
}

// deadline is when the check must be done looking: a little before the
// hold ends by itself.
func (h *hold) deadline(ev *event) time.Time {
	return ev.At.Add(h.budget - 100*time.Millisecond)
}

// during returns a context that ends at the hold's deadline.
func (h *hold) during(r *run, ev *event) (context.Context, context.CancelFunc) {
	return context.WithDeadline(r.ctx, h.deadline(ev))
}

// done releases the hook.
func (h *hold) done() { h.once.Do(func() { close(h.release) }) }

// releasedBy reports whether the hook was still held at t.
func (h *hold) heldAt(t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ended.IsZero() || t.Before(h.ended)
}

// callResult is the outcome of a CRI call made in the background.
type callResult struct {
	id  string
	err error
	at  time.Time
}

// background runs call on a goroutine and delivers its outcome.
func background(call func() (string, error)) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		id, err := call()
		out <- callResult{id: id, err: err, at: time.Now()}
	}()
	return out
}

// await waits for a background call, bounded by the run.
func (r *run) await(c <-chan callResult) (callResult, error) {
	select {
	case res := <-c:
		return res, nil
	case <-r.ctx.Done():
		return callResult{}, fmt.Errorf("the CRI call did not return: %w", r.ctx.Err())
	}
}
