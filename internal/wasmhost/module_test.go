package wasmhost

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsModule(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		content string
		want    bool
	}{
		{"module", "\x00asm\x01\x00\x00\x00rest", true},
		{"empty-module", "\x00asm\x01\x00\x00\x00", true},
		{"version-2", "\x00asm\x02\x00\x00\x00", false},
		{"short", "\x00asm", false},
		{"empty", "", false},
		{"script", "#!/bin/sh\nexit 0\n", false},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := IsModule(path)
		if err != nil || got != c.want {
			t.Errorf("%s: IsModule = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if _, err := IsModule(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file: no error")
	}
	if d := DefaultCacheDir(); d != "" && filepath.Base(d) != "wasm" {
		t.Errorf("DefaultCacheDir() = %q, want .../nrikit/wasm", d)
	}
}

// TestToolCacheDir checks that a command's default cache directory is
// dropped (with the reason) when it is not trusted, and that a directory
// the user named is kept as it is.
func TestToolCacheDir(t *testing.T) {
	home := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", home)
	def := DefaultCacheDir()
	if got, err := ToolCacheDir(def); got != def || err != nil {
		t.Errorf("ToolCacheDir(default in a trusted home) = %q, %v; want it kept", got, err)
	}
	if err := os.Chmod(home, 0o775); err != nil {
		t.Fatal(err)
	}
	if got, err := ToolCacheDir(def); got != "" || !strings.Contains(fmt.Sprint(err), "writable by its group or others") {
		t.Errorf("ToolCacheDir(default in a group-writable home) = %q, %v; want \"\" and why", got, err)
	}
	named := filepath.Join(home, "named")
	if got, err := ToolCacheDir(named); got != named || err != nil {
		t.Errorf("ToolCacheDir(named) = %q, %v; want it kept", got, err)
	}
	if got, err := ToolCacheDir(""); got != "" || err != nil {
		t.Errorf("ToolCacheDir(\"\") = %q, %v", got, err)
	}
}
