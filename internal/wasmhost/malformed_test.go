//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadMalformedModuleFails: wazero v1.12's validator panics on a
// module whose function section names a type out of range when another
// function calls it, and its decoder runs out of memory on a huge
// import count (both found by internal/wasmfuel's fuzz test); Load must
// fail instead of taking the process down.
func TestLoadMalformedModuleFails(t *testing.T) {
	for name, module := range map[string][]byte{
		"type index out of range": []byte("\x00asm\x01\x00\x00\x00\x01\t\x02`\x01\x7f\x01\x7f`\x00\x00\x02\f\x01\x03000\x040000\x00\x00\x03\x06\x05\x000000\nh\x054\x010\x7f\x02@A0A0A0A0A0x\x10\x02000000000000000000000000000000000\v\a\x0000000\v\a\x0000000\v\x1a\x00000000000000000000000000\v\x06\x000000\v"),
		// 2^31 imports in a few bytes: wazero v1.12 allocates for them
		// first, a fatal out-of-memory error.
		"huge import count": []byte("\x00asm\x01\x00\x00\x00\x020\xba\xdc\xa4t\xba000000000000000"),
	} {
		t.Run(name, func(t *testing.T) { loadFails(t, module) })
	}
}

func loadFails(t *testing.T, module []byte) {
	path := filepath.Join(t.TempDir(), "10-bad")
	if err := os.WriteFile(path, module, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, fuel := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p, err := Load(ctx, path, Options{FuelChecks: fuel, Logger: slog.New(slog.DiscardHandler)})
		cancel()
		if err == nil {
			_ = p.Close(context.Background())
			t.Fatalf("FuelChecks %v: malformed module loaded", fuel)
		}
		if !strings.Contains(err.Error(), "compiling") {
			t.Errorf("FuelChecks %v: error %v, want a compilation error", fuel, err)
		}
	}
}
