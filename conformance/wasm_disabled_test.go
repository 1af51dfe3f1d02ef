//go:build nri_no_wasm

package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckPluginWASMDisabled: built without WASM support, a module is
// still recognised, and fails CheckLoads saying why.
func TestCheckPluginWASMDisabled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "10-empty")
	if err := os.WriteFile(path, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := CheckPlugin(context.Background(), PluginConfig{Command: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	if res := requireCheck(t, r, CheckLoads); res.Passed || !strings.Contains(res.Reason, "nri_no_wasm") {
		t.Errorf("%s: %+v", CheckLoads, res)
	}
}
