//go:build !nri_no_wasm

package wasmhost

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/wasmtest"
)

// testGuest is the guest module, built once per test binary and
// compiled once into the compilation cache the tests share.
var testGuest = &wasmtest.Guest{Pkg: "./testdata/guest"}

func TestMain(m *testing.M) {
	// wasmtest.Precompile runs this package's test binary, built without
	// the race detector, to fill a compilation cache.
	if v := os.Getenv(wasmtest.PrecompileEnv); v != "" {
		module, dir, _ := strings.Cut(v, string(os.PathListSeparator))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		var err error
		// Both bounds: close-on-context-done and FuelChecks
		// (TestFuelChecksBoundCalls) compile differently.
		for _, fuel := range []bool{false, true} {
			var p *Plugin
			p, err = Load(ctx, module, Options{CacheDir: dir, FuelChecks: fuel, Logger: slog.New(slog.DiscardHandler)})
			if err == nil {
				err = p.Close(ctx)
			}
			if err != nil {
				break
			}
		}
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "precompiling:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	testGuest.Remove()
	os.Exit(code)
}

// guest returns the path of the test guest module, building it on first
// use.
func guest(tb testing.TB) string {
	tb.Helper()
	return testGuest.Module(tb)
}

// logBuffer collects log records as text, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) contains(s string) bool { return strings.Contains(l.String(), s) }

// load loads the test guest with the shared cache and a captured log.
func load(tb testing.TB, opts Options) (*Plugin, *logBuffer) {
	tb.Helper()
	logs := &logBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	switch opts.CacheDir {
	case "":
		opts.CacheDir = testGuest.CacheDir(tb)
	case "-": // opts.Cache is set
		opts.CacheDir = ""
	}
	if opts.Name == "" {
		opts.Name = "10-guest"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path := guest(tb)
	start := time.Now()
	p, err := Load(ctx, path, opts)
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	tb.Logf("loaded %s in %v", opts.Name, time.Since(start).Round(time.Millisecond))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return p, logs
}

// roundTrip encodes req, calls fn with timeout and decodes into rsp.
func roundTrip(tb testing.TB, p *Plugin, timeout time.Duration, fn string, req, rsp proto.Message) error {
	tb.Helper()
	b, err := proto.Marshal(req)
	if err != nil {
		tb.Fatalf("encoding %s request: %v", fn, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := p.Call(ctx, fn, b)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(out, rsp); err != nil {
		tb.Fatalf("decoding %s response: %v", fn, err)
	}
	return nil
}

// configure sends Configure with config and returns the response.
func configure(tb testing.TB, p *Plugin, config string) *api.ConfigureResponse {
	tb.Helper()
	rsp := &api.ConfigureResponse{}
	req := &api.ConfigureRequest{Config: config, RuntimeName: "wasmhost-test", RuntimeVersion: "v0", NRIVersion: api.NRIVersion}
	if err := roundTrip(tb, p, 10*time.Second, FuncConfigure, req, rsp); err != nil {
		tb.Fatalf("Configure: %v", err)
	}
	return rsp
}

// createContainer sends CreateContainer for a container named name.
func createContainer(tb testing.TB, p *Plugin, timeout time.Duration, name string) (*api.CreateContainerResponse, error) {
	tb.Helper()
	req := &api.CreateContainerRequest{
		Pod:       &api.PodSandbox{Id: "pod0", Name: "pod", Namespace: "default"},
		Container: &api.Container{Id: "ctr-" + name, PodSandboxId: "pod0", Name: name},
	}
	rsp := &api.CreateContainerResponse{}
	err := roundTrip(tb, p, timeout, EventFunc(api.Event_CREATE_CONTAINER), req, rsp)
	return rsp, err
}

// envOf returns the value of the environment variable key set by adj.
func envOf(adj *api.ContainerAdjustment, key string) (string, bool) {
	for _, kv := range adj.GetEnv() {
		if kv.GetKey() == key {
			return kv.GetValue(), true
		}
	}
	return "", false
}

// fakeModule returns a minimal module with every export of the ABI:
// plugin_api_version returns version, every request answers empty,
// malloc returns 0. With badMalloc, malloc has free's signature.
func fakeModule(version int64, badMalloc bool) []byte {
	return wasmtest.FakeModule(version, badMalloc, Funcs())
}
