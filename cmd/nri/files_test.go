package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/internal/testing/wasmtest"
	"github.com/nrikit/nrikit/internal/wasmhost"
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

// TestPluginOfAnotherUser checks that an executable given with --plugin
// runs even if the runtime would refuse it in its plugin directory
// (group-writable and, as root, another user's, as under sudo): the
// user named it, and the simulator installs a launcher script of its
// own.
func TestPluginOfAnotherUser(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "50-logger")
	body := "#!/bin/sh\nexec '" + nriBinary + "' plugin logger \"$@\"\n"
	if err := os.WriteFile(plugin, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(plugin, 0o775); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(plugin, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	r := nri(t, "run", "--plugin", plugin, "--output", "json")
	rep := decode(t, r.stdout)
	if r.code != 0 || !rep.OK {
		t.Fatalf("exit %d, ok %v, registration errors %+v\nstderr:\n%s", r.code, rep.OK, rep.RegistrationErrors, r.stderr)
	}
	if _, ok := findPlugin(rep, "50-logger"); !ok {
		t.Errorf("50-logger not in the report")
	}
}
