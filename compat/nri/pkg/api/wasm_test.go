package api

import (
	"testing"

	"github.com/nrikit/nrikit/stub/wasmguest"
)

// Plugin, the WASM plugin's service, has the ttrpc service's methods.
var (
	_ PluginService = Plugin(nil)
	_ Plugin        = PluginService(nil)
)

// TestPluginAPIVersion: the ABI version compat states is the one
// nrikit's guest exports.
func TestPluginAPIVersion(t *testing.T) {
	if PluginPluginAPIVersion != wasmguest.APIVersion {
		t.Errorf("PluginPluginAPIVersion = %d, nrikit's guest speaks %d", PluginPluginAPIVersion, wasmguest.APIVersion)
	}
}
