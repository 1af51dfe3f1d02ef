package conformance

import (
	"os"
	"testing"

	"github.com/nrikit/nrikit/internal/testing/wasmtest"
)

// templateGuest is plugins/template built as a WASM plugin module, named
// as a runtime would find it (IDX-NAME, no extension, mode 0644), once per
// test binary, with the compilation cache the tests share.
var templateGuest = &wasmtest.Guest{Pkg: "../plugins/template", Name: "10-template"}

// templateModule returns the path of the template's module, building it
// on first use (it skips the test without a go command).
func templateModule(tb testing.TB) string {
	tb.Helper()
	path := templateGuest.Module(tb)
	info, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	if info.Mode().Perm()&0o111 != 0 {
		tb.Fatalf("module %s has mode %v; want a file that is not executable", path, info.Mode())
	}
	return path
}

// wasmCacheDir is the compilation cache the WASM tests share.
func wasmCacheDir(tb testing.TB) string {
	tb.Helper()
	return templateGuest.CacheDir(tb)
}
