package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/internal/wasmhost"
	"github.com/nrikit/nrikit/internal/wasmtest"
)

// TestDefaultWASMCacheDirRefused checks that nri run does not use its
// default compilation cache directory when it is not the user's own
// (under sudo -E it is the invoking user's; here the cache home is
// group-writable): it says so and runs the WASM plugin with compiled
// modules in memory, writing nothing there.
func TestDefaultWASMCacheDirRefused(t *testing.T) {
	home := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o775); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", home)
	module := filepath.Join(t.TempDir(), "50-fake")
	if err := os.WriteFile(module, wasmtest.FakeModule(wasmhost.APIVersion, false, wasmhost.Funcs()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := nri(t, "run", "--plugin", module, "--log-level", "info")
	if !strings.Contains(r.stderr, "not using the default WASM compilation cache directory") ||
		!strings.Contains(r.stderr, "writable by its group or others") {
		t.Errorf("stderr does not say why the default cache directory is not used:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "loaded WASM plugin") {
		t.Errorf("the WASM plugin was not loaded:\n%s", r.stderr)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("the refused cache home was written to: %v", entries)
	}
}
