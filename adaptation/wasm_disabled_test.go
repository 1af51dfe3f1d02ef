//go:build nri_no_wasm

package adaptation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWASMDisabled checks a runtime built without WASM support: a WASM
// module in the plugin directory is refused with the reason, not loaded
// again, and the runtime starts.
func TestWASMDisabled(t *testing.T) {
	rt := newTestRuntime(t, nil, WithDisabledExternalConnections(),
		WithRestartLaunched(Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}))
	must(t, os.WriteFile(filepath.Join(rt.dir, "10-wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644))
	rt.start(t)
	failed := rt.logs.wait(t, "load failure", func(r logRecord) bool {
		return r.msg == "pre-installed plugin failed to start" && r.attrs["plugin"] == "10-wasm"
	})
	if e := failed.attrs["error"]; !strings.Contains(e, "built without WASM support (build tag nri_no_wasm)") {
		t.Errorf("error %q, want the missing WASM support", e)
	}
	rt.logs.wait(t, "no retry", func(r logRecord) bool {
		return r.msg == "not restarting pre-installed plugin" && r.attrs["plugin"] == "10-wasm"
	})
}
