package wasmhost

import (
	"os"
	"path/filepath"
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
