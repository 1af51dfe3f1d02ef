//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/testing/testscale"
	"github.com/nrikit/nrikit/internal/testing/wasmtest"
	"github.com/nrikit/nrikit/internal/trustedfile"
	"github.com/nrikit/nrikit/internal/wasmabi"
)

// TestLoadFileRules checks how Load reads a module file: a FIFO is
// refused at once (it would block a read), a file over MaxModuleSize is
// refused before it is read, and with TrustedFile a file others may
// write is refused (without it, loaded).
func TestLoadFileRules(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	module := fakeModule(APIVersion, false)
	path := filepath.Join(dir, "10-a")
	if err := os.WriteFile(path, module, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "20-fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		name   string
		path   string
		opts   Options
		reason string
	}{
		{"group-writable", path, Options{}, ""},
		{"group-writable, trusted file required", path, Options{TrustedFile: true}, "writable by its group or others"},
		{"at the size limit", path, Options{MaxModuleSize: int64(len(module))}, ""},
		{"over the size limit", path, Options{MaxModuleSize: int64(len(module)) - 1}, "over the limit of"},
		{"FIFO", fifo, Options{}, "a named pipe, not a regular file"},
	} {
		c.opts.Logger = log
		p, err := Load(ctx, c.path, c.opts)
		if c.reason == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else {
				_ = p.Close(ctx)
			}
			continue
		}
		if !trustedfile.IsUntrusted(err) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %v, want a refusal because %q", c.name, err, c.reason)
		}
	}
}

// TestLoadCancelledWhileCompiling checks that a load whose context ends
// while the module compiles stops compiling: it fails with the context's
// error from the compilation (not after it, from the instantiation),
// within a bound (decoding the module before the compilation is not
// interrupted: 0.3 s, 1.7 s under the race detector) well below a
// compilation's time under the race detector (most of a minute).
func TestLoadCancelledWhileCompiling(t *testing.T) {
	path := guest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	p, err := Load(ctx, path, Options{Logger: slog.New(slog.DiscardHandler), CacheDir: filepath.Join(t.TempDir(), "cache")})
	took := time.Since(start)
	if err == nil {
		_ = p.Close(context.Background())
		t.Fatal("Load within 100 ms of an uncompiled Go guest succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "compiling") {
		t.Errorf("Load: %v, want the deadline, from the compilation", err)
	}
	t.Logf("Load with a 100 ms deadline returned after %v", took.Round(time.Millisecond))
	if bound := testscale.D(10 * time.Second); took > bound {
		t.Errorf("Load returned after %v, want within %v (10 s scaled by the load)", took, bound)
	}
}

// TestSplitSynchronizeDeclared checks how a module declares that it
// handles Synchronize in parts: the guest built with stub/wasmguest
// exports the marker and declares it; a module without the marker (as
// one on upstream's glue) does not; a marker of the wrong signature
// declares nothing, and the log says why. MemoryLimit is the limit in
// bytes.
func TestSplitSynchronizeDeclared(t *testing.T) {
	p, _ := load(t, Options{MemoryLimitPages: 1024})
	if !p.SplitsSynchronize() {
		t.Errorf("the stub/wasmguest guest does not declare split Synchronize")
	}
	if got := p.MemoryLimit(); got != 64<<20 {
		t.Errorf("MemoryLimit() = %d, want %d (1024 pages)", got, 64<<20)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		name    string
		exports []string
		warning string
	}{
		{"no marker", Funcs(), ""},
		{"marker of the wrong signature", append(Funcs(), wasmabi.ExportSplitSynchronize), "wrong signature"},
	} {
		path := filepath.Join(t.TempDir(), "10-fake")
		if err := os.WriteFile(path, wasmtest.FakeModule(APIVersion, false, c.exports), 0o600); err != nil {
			t.Fatal(err)
		}
		logs := &logBuffer{}
		f, err := Load(ctx, path, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if f.SplitsSynchronize() {
			t.Errorf("%s: declares split Synchronize", c.name)
		}
		if c.warning != "" && !logs.contains(c.warning) {
			t.Errorf("%s: the log does not say %q:\n%s", c.name, c.warning, logs.String())
		}
		if got := f.MemoryLimit(); got != DefaultMemoryLimitPages*65536 {
			t.Errorf("%s: MemoryLimit() = %d, want the default %d", c.name, got, DefaultMemoryLimitPages*65536)
		}
		_ = f.Close(ctx)
	}
}
