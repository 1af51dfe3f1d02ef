package adaptation

import (
	"context"
	"sync"
	"time"

	"github.com/nrikit/nrikit/adaptation/internal/wire"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// builtinEndpoint is an in-process plugin: calls go straight to its
// service. It is gone only when closed.
type builtinEndpoint struct {
	api.PluginService
	done chan struct{}
	once sync.Once
}

func newBuiltinEndpoint(svc api.PluginService) *builtinEndpoint {
	return &builtinEndpoint{PluginService: svc, done: make(chan struct{})}
}

// Done is closed by Close.
func (b *builtinEndpoint) Done() <-chan struct{} { return b.done }

// call makes the call in-process with a clone of req: the request may
// share objects with the runtime's own request and with the requests of
// other plugins, which the plugin must not be able to change.
func (b *builtinEndpoint) call(ctx context.Context, m *method, req proto.Message, _ *wire.Shared) (proto.Message, error) {
	return m.serve(b.PluginService, ctx, proto.Clone(req))
}

// failure is FailureRejected: an in-process plugin's errors are its
// answers.
func (b *builtinEndpoint) failure(error) FailureKind { return FailureRejected }

// syncParts returns the parts of wire.SplitSync, with copies of the objects.
func (b *builtinEndpoint) syncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *wire.SyncParts {
	return wire.PlainSyncParts(cloneAll(pods), cloneAll(ctrs), limit)
}

// cloneAll returns deep copies of ms.
func cloneAll[M proto.Message](ms []M) []M {
	out := make([]M, len(ms))
	for i, m := range ms {
		out[i] = api.Clone(m)
	}
	return out
}

// configured does nothing: a builtin plugin is called in-process.
func (b *builtinEndpoint) configured(time.Duration) {}

// Close marks the plugin gone.
func (b *builtinEndpoint) Close() error {
	b.once.Do(func() { close(b.done) })
	return nil
}
