//go:build !nri_no_wasm

package checkcmd

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestCheckPluginWASMModule: a COMMAND that is a WebAssembly module (by
// its magic; this one has no extension and is not executable) is loaded
// in-process, in the compilation cache of --wasm-cache-dir; a module
// without the ABI's exports fails the load check with wasmhost's reason.
func TestCheckPluginWASMModule(t *testing.T) {
	dir := t.TempDir()
	module, cache := dir+"/10-empty", dir+"/cache"
	if err := os.WriteFile(module, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "plugin", "--wasm-cache-dir", cache, module)
	if !errors.Is(err, ErrChecksFailed) {
		t.Fatalf("err = %v, want ErrChecksFailed\n%s", err, out)
	}
	if !strings.HasPrefix(out, "FAIL  loads as a WASM module") || !strings.Contains(out, "missing exports plugin_api_version") {
		t.Errorf("output lacks the failed load:\n%s", out)
	}
	if entries, err := os.ReadDir(cache); err != nil || len(entries) == 0 {
		t.Errorf("compilation cache %s: %v, %d entries", cache, err, len(entries))
	}
	if _, err := run(t, "", "plugin", module, "-x"); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("arguments to a WASM module: err = %v", err)
	}
}
