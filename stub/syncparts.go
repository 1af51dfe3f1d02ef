package stub

import (
	"context"
	"fmt"
	"sync"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A runtime splits a large Synchronize request into parts and sends each
// part only when the plugin has answered the one before (more=true).
// Decoding a part takes the plugin longer than the runtime takes to send
// it, so a stub that decoded each part before answering would keep the
// runtime waiting for most of the snapshot's transfer. Instead, the
// stub's ttrpc interceptor (fastDecoding) only captures a part's bytes
// and reads its more field; the dispatcher answers a part with more set
// at once and decodes it on a goroutine of its own, while the runtime
// sends the next one (and, with more than one P, beside the decoding of
// the others). When the last part arrives, the dispatcher decodes it,
// waits for the parts before it, and hands them to the session in the
// order they came: the plugin's handler sees the same snapshot as with
// decoding in turn. A part that fails to decode fails the last part's
// answer, which names it; the runtime then treats the snapshot as it
// treats any failed Synchronize.

// deferredPart is how fastDecoding hands the dispatcher a Synchronize part
// whose pods and containers are not decoded yet: through the request's
// context, the only channel from a ttrpc interceptor to the service.
type deferredPart struct {
	// decode decodes the part into the request the handler was given
	// (nil: the part is decoded already).
	decode func() error
}

type deferredPartKey struct{}

// withDeferredPart returns ctx carrying p, for the dispatcher.
func withDeferredPart(ctx context.Context, p *deferredPart) context.Context {
	return context.WithValue(ctx, deferredPartKey{}, p)
}

// deferredPartOf returns the deferred decoding of the request of ctx (nil
// if there is none: the request is decoded).
func deferredPartOf(ctx context.Context) func() error {
	if p, ok := ctx.Value(deferredPartKey{}).(*deferredPart); ok {
		return p.decode
	}
	return nil
}

// syncPart is a part of a split Synchronize request, decoded or being
// decoded.
type syncPart struct {
	req  *api.SynchronizeRequest
	done chan struct{} // closed when req is decoded (or failed to be)
	err  error         // the decoding's, once done is closed
}

// syncParts holds the parts of a split Synchronize request that came
// before the last, in the order they came. Its zero value is ready.
type syncParts struct {
	mu    sync.Mutex
	parts []*syncPart
}

// add records a part with more set and starts decoding it, if decode is
// not nil, on a goroutine that ends when the part is decoded (its work
// is bounded by the part's size, which ttrpc bounds).
func (s *syncParts) add(req *api.SynchronizeRequest, decode func() error) {
	p := &syncPart{req: req, done: make(chan struct{})}
	if decode == nil {
		close(p.done)
	} else {
		go func() {
			defer close(p.done)
			p.err = decode()
		}()
	}
	s.mu.Lock()
	s.parts = append(s.parts, p)
	s.mu.Unlock()
}

// take returns the parts recorded so far and forgets them.
func (s *syncParts) take() []*syncPart {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := s.parts
	s.parts = nil
	return parts
}

// wait waits, at most until ctx ends, for every part to be decoded, and
// returns the first failure, naming the part (its number counts from 1
// among all the request's parts).
func waitParts(ctx context.Context, parts []*syncPart) error {
	for i, p := range parts {
		select {
		case <-p.done:
		case <-ctx.Done():
			return fmt.Errorf("stub: waiting for part %d of %d of the Synchronize request to be decoded: %w",
				i+1, len(parts)+1, ctx.Err())
		}
		if p.err != nil {
			return decodeStatus(fmt.Errorf("part %d of %d: %w", i+1, len(parts)+1, p.err))
		}
	}
	return nil
}

// decodeStatus is the error a request that could not be decoded is
// answered with, as ttrpc reports one it cannot decode.
func decodeStatus(err error) error {
	return status.Errorf(codes.Internal, "stub: decoding SynchronizeRequest: %v", err)
}
