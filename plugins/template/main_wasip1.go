//go:build wasip1

package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

// toldCapabilities returns the capabilities the runtime told, from the
// Configure handler's context.
func toldCapabilities(ctx context.Context) (capability.Set, bool) {
	return wasmguest.ToldCapabilities(ctx)
}

// init registers the plugin as the module's: a WASM plugin module, built
// with -buildmode=c-shared, runs its init functions when the runtime
// loads it, never main. Its standard error reaches nrikit's runtime log
// (upstream NRI's runtime discards it). Options such as
// wasmguest.WithScope and wasmguest.WithFailurePolicy go here.
func init() {
	wasmguest.Register(&plugin{log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
}

// main is required by the go command and never runs in a c-shared module.
func main() {}
