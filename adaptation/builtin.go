package adaptation

import (
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
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

// configured does nothing: a builtin plugin is called in-process.
func (b *builtinEndpoint) configured(time.Duration) {}

// Close marks the plugin gone.
func (b *builtinEndpoint) Close() error {
	b.once.Do(func() { close(b.done) })
	return nil
}
