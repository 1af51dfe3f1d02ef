//go:build !nri_no_wasm

package conformance

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

// TestCheckPluginWASM checks plugins/template's WASM build: the module
// (non-executable, without an extension) is recognised by its magic and
// checked in-process, every check that applies passes, and those of the
// connection are skipped. Launched as a process, the module would fail to
// start and CheckPlugin would return an error.
func TestCheckPluginWASM(t *testing.T) {
	module := templateModule(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log bytes.Buffer
	r, err := CheckPlugin(ctx, PluginConfig{Command: []string{module}, WASMCacheDir: wasmCacheDir(t), Output: &log})
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())
	if r.Failed() {
		t.Fatal("the template's WASM build failed the checks")
	}
	if res := requireCheck(t, r, CheckLoads); res.Skipped || !strings.Contains(res.Reason, module) {
		t.Errorf("%s: %+v", CheckLoads, res)
	}
	for _, name := range []string{CheckRegisters, CheckIdentity, CheckCloses} {
		if res := requireCheck(t, r, name); !res.Skipped || !strings.Contains(res.Reason, notApplicableWASM) {
			t.Errorf("%s: %+v, want skipped as not applicable", name, res)
		}
	}
	want := api.MaskOf(api.Event_RUN_POD_SANDBOX, api.Event_STOP_POD_SANDBOX, api.Event_CREATE_CONTAINER,
		api.Event_START_CONTAINER, api.Event_REMOVE_CONTAINER)
	if res := requireCheck(t, r, CheckSubscription); !strings.Contains(res.Reason, want.String()) {
		t.Errorf("%s: %q, want the template's handlers %s", CheckSubscription, res.Reason, want)
	}
	if res := requireCheck(t, r, EventCheckName(api.Event_CREATE_CONTAINER)); !strings.Contains(res.Reason, "env[NRI_TEMPLATE]") {
		t.Errorf("CreateContainer: %q", res.Reason)
	}
	for _, name := range []string{CheckConfigure, CheckSyncSingle, CheckSyncChunked, CheckWellFormed, CheckStaysUp, CheckShutdown} {
		if res := requireCheck(t, r, name); !res.Passed || res.Skipped {
			t.Errorf("%s: %+v", name, res)
		}
	}
	if n := r.SkippedCount(); n != 3 || !strings.Contains(text.String(), "SKIP  "+CheckRegisters) || !strings.Contains(text.String(), "3 skipped") {
		t.Errorf("%d skipped; report:\n%s", n, text.String())
	}
	// The guest's stderr (the template logs with slog) reaches Output.
	if !strings.Contains(log.String(), "container being created") {
		t.Errorf("the guest's log did not reach Output:\n%s", log.String())
	}
}

// TestWASMTemplateInjects loads plugins/template's WASM build as nrikit's
// runtime does and checks that CreateContainer injects NRI_TEMPLATE, as
// the process build does (plugins/template's own tests).
func TestWASMTemplateInjects(t *testing.T) {
	module := templateModule(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := wasmhost.Load(ctx, module, wasmhost.Options{CacheDir: wasmCacheDir(t), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	client := wasmhost.NewClient(p)
	if _, err := client.Configure(ctx, &api.ConfigureRequest{RuntimeName: "test"}); err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "pod1", Name: "web", Namespace: "default"}
	rsp, err := client.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: &api.Container{Id: "ctr1", PodSandboxId: "pod1", Name: "nginx"}})
	if err != nil {
		t.Fatal(err)
	}
	env := rsp.GetAdjust().GetEnv()
	if len(env) != 1 || env[0].GetKey() != "NRI_TEMPLATE" || env[0].GetValue() != "injected-by-nri-template" {
		t.Errorf("injected env = %v", env)
	}
	if got := rsp.GetAdjust().GetAnnotations()["template.nrikit.io/seen"]; got != "true" {
		t.Errorf("injected annotation = %q", got)
	}
}

// TestCheckPluginWASMBroken checks that a module that does not load fails
// CheckLoads with wasmhost's reason, and that nothing else runs.
func TestCheckPluginWASMBroken(t *testing.T) {
	requestFuncs := func(apiVersion byte) []rawFunc {
		fns := []rawFunc{
			{name: "plugin_api_version", results: []byte{i64}, body: []byte{opI64Const, apiVersion}},
			{name: "malloc", params: []byte{i32}, results: []byte{i32}, body: []byte{opI32Const, 0}},
			{name: "free", params: []byte{i32}},
			{name: "_initialize"},
		}
		for _, fn := range wasmhost.Funcs() {
			fns = append(fns, rawFunc{name: fn, params: []byte{i32, i32}, results: []byte{i64}, body: []byte{opI64Const, 0}})
		}
		return fns
	}
	tests := []struct {
		name   string
		module []byte
		want   string
	}{
		{"empty module", rawModule(nil, false, nil), "missing exports plugin_api_version, malloc, free, plugin_configure"},
		{"command", rawModule([]rawFunc{{name: "_start"}}, true, nil), "build it with -buildmode=c-shared"},
		{"wrong API version", rawModule(requestFuncs(2), true, nil), "implements WASM plugin API version 2, the host supports 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "10-broken")
			if err := os.WriteFile(path, tt.module, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := CheckPlugin(ctx, PluginConfig{Command: []string{path}})
			if err != nil {
				t.Fatalf("CheckPlugin: %v", err)
			}
			res := requireCheck(t, r, CheckLoads)
			if res.Passed || !strings.Contains(res.Reason, tt.want) || !strings.Contains(res.Reason, "wasmhost: ") {
				t.Errorf("%s: %+v, want a failure with %q", CheckLoads, res, tt.want)
			}
			if len(r.Results) != 1 || !r.Failed() {
				t.Errorf("results after a failed load: %+v", r.Results)
			}
		})
	}
	// The module of the last case is valid but for its version: one with
	// version 1 loads, so the cases above fail for the reason given.
	path := filepath.Join(t.TempDir(), "10-fine")
	if err := os.WriteFile(path, rawModule(requestFuncs(1), true, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := wasmhost.Load(context.Background(), path, wasmhost.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("the version 1 module does not load: %v", err)
	}
	_ = p.Close(context.Background())
}

// dataOffset is where rawModule places its data.
const dataOffset = 2048

// answeringModule is a module that answers every request empty, except
// Configure with configure (nil: empty, which subscribes to all events),
// and that traps in the exports of trap.
func answeringModule(configure []byte, trap ...string) []byte {
	return rawModule(answeringFuncs(configure, trap...), true, configure)
}

// answeringFuncs are the functions of answeringModule.
func answeringFuncs(configure []byte, trap ...string) []rawFunc {
	fns := []rawFunc{
		{name: "plugin_api_version", results: []byte{i64}, body: []byte{opI64Const, 1}},
		// Every request is written at 1024, within the one page.
		{name: "malloc", params: []byte{i32}, results: []byte{i32}, body: cat([]byte{opI32Const}, sleb(1024))},
		{name: "free", params: []byte{i32}},
		{name: "_initialize"},
	}
	for _, fn := range wasmhost.Funcs() {
		body := []byte{opI64Const, 0}
		if fn == wasmhost.FuncConfigure && configure != nil {
			body = cat([]byte{opI64Const}, sleb(dataOffset<<32|int64(len(configure))))
		}
		for _, t := range trap {
			if t == fn {
				body = []byte{opUnreachable}
			}
		}
		fns = append(fns, rawFunc{name: fn, params: []byte{i32, i32}, results: []byte{i64}, body: body})
	}
	return fns
}

// TestCheckPluginWASMAllEvents: a module whose Configure answer has no
// events (as upstream's glue answers for a plugin without a subscription)
// is subscribed to every event; each is delivered and answered, and none
// is left to probe.
func TestCheckPluginWASMAllEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "10-all")
	if err := os.WriteFile(path, answeringModule(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := CheckPlugin(context.Background(), PluginConfig{Command: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	// The module does not declare that it handles Synchronize in parts,
	// as upstream's WASM plugins do not: runtimes send it its snapshot
	// whole, and so does the checker.
	if res := requireCheck(t, r, CheckSyncChunked); !res.Skipped || !strings.Contains(res.Reason, "does not export "+wasmabi.ExportSplitSynchronize) {
		t.Errorf("%s: %+v, want it skipped, saying the module does not declare split Synchronize", CheckSyncChunked, res)
	}
	if r.Failed() {
		t.Errorf("checks failed: %+v", r.Results)
	}
	if res := requireCheck(t, r, CheckSubscription); !strings.HasPrefix(res.Reason, "0: all events") {
		t.Errorf("%s: %q", CheckSubscription, res.Reason)
	}
	for _, ev := range api.Events() {
		if res := requireCheck(t, r, EventCheckName(ev)); !res.Passed {
			t.Errorf("%s: %+v", ev.Name(), res)
		}
	}
	if res := requireCheck(t, r, CheckProbe); res.Reason != "subscribed to every event" {
		t.Errorf("%s: %q", CheckProbe, res.Reason)
	}
}

// TestCheckPluginWASMSplitDeclared: a module that declares that it
// handles Synchronize in parts gets a split one, and fails the check if
// it answers a part that has more with more=false, as a plugin with a
// connection does.
func TestCheckPluginWASMSplitDeclared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "10-split")
	fns := append(answeringFuncs(nil), rawFunc{name: wasmabi.ExportSplitSynchronize})
	if err := os.WriteFile(path, rawModule(fns, true, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := CheckPlugin(context.Background(), PluginConfig{Command: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	if res := requireCheck(t, r, CheckSyncChunked); res.Passed || res.Skipped || res.Informational ||
		!strings.Contains(res.Reason, "answered part 1 of 4 (more=true) with more=false") {
		t.Errorf("%s: %+v, want it failed: the module declares split Synchronize but does not handle it", CheckSyncChunked, res)
	}
}

// TestCheckPluginWASMTrap: a module that traps in CreateContainer fails
// that check with the trap; the instance is replaced (and configured
// again) for the next event, which passes.
func TestCheckPluginWASMTrap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "10-trap")
	if err := os.WriteFile(path, answeringModule(nil, wasmhost.EventFunc(api.Event_CREATE_CONTAINER)), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	r, err := CheckPlugin(context.Background(), PluginConfig{Command: []string{path}, Output: &log})
	if err != nil {
		t.Fatal(err)
	}
	res := requireCheck(t, r, EventCheckName(api.Event_CREATE_CONTAINER))
	if res.Passed || !strings.Contains(res.Reason, "trap: wasm error: unreachable") || !strings.Contains(res.Reason, "instance discarded") || strings.Contains(res.Reason, "\n") {
		t.Errorf("CreateContainer: %+v, want a failure naming the trap, on one line", res)
	}
	if res := requireCheck(t, r, EventCheckName(api.Event_POST_CREATE_CONTAINER)); !res.Passed {
		t.Errorf("PostCreateContainer after the trap: %+v", res)
	}
	if _, failed := r.Counts(); failed != 1 {
		t.Errorf("%d checks failed, want 1 (CreateContainer): %+v", failed, r.Results)
	}
	if !strings.Contains(log.String(), "made a fresh WASM plugin instance") {
		t.Errorf("no fresh instance in the log:\n%s", log.String())
	}
}

// TestCheckPluginWASMCrashOnProbe: a module subscribed to CreateContainer
// that traps on an unsubscribed event fails "stays up", as a process that
// exits on one does.
func TestCheckPluginWASMCrashOnProbe(t *testing.T) {
	configure, err := proto.Marshal(&api.ConfigureResponse{Events: int32(api.MaskOf(api.Event_CREATE_CONTAINER))})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "10-probe")
	if err := os.WriteFile(path, answeringModule(configure, wasmhost.EventFunc(api.Event_RUN_POD_SANDBOX)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := CheckPlugin(context.Background(), PluginConfig{Command: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	if res := requireCheck(t, r, CheckSubscription); !strings.HasPrefix(res.Reason, "CreateContainer (") {
		t.Errorf("%s: %q", CheckSubscription, res.Reason)
	}
	if res := requireCheck(t, r, EventCheckName(api.Event_CREATE_CONTAINER)); !res.Passed {
		t.Errorf("CreateContainer: %+v", res)
	}
	res := requireCheck(t, r, CheckStaysUp)
	if res.Passed || !strings.Contains(res.Reason, "after RunPodSandbox") || !strings.Contains(res.Reason, "instance was discarded") {
		t.Errorf("%s: %+v, want a failure after RunPodSandbox", CheckStaysUp, res)
	}
}

// TestCheckPluginWASMArguments checks that a WASM module is not given
// arguments or an environment, which only a process could use.
func TestCheckPluginWASMArguments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "10-empty.wasm")
	if err := os.WriteFile(path, rawModule(nil, false, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []PluginConfig{
		{Command: []string{path, "-v"}},
		{Command: []string{path}, Env: []string{"A=B"}},
	} {
		if _, err := CheckPlugin(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "is a WASM module") {
			t.Errorf("CheckPlugin(%+v): %v, want a WASM module error", cfg, err)
		}
	}
}

// Value types and opcodes of the modules rawModule assembles.
const (
	i32           = 0x7f
	i64           = 0x7e
	opI32Const    = 0x41
	opI64Const    = 0x42
	opEnd         = 0x0b
	opUnreachable = 0x00
)

// rawFunc is an exported function of a module made by rawModule; body
// holds its instructions (without the final end; constants in signed
// LEB128).
type rawFunc struct {
	name            string
	params, results []byte
	body            []byte
}

// rawModule assembles a WebAssembly module exporting fns (and, if memory,
// one page of memory named "memory", holding data at dataOffset), for
// modules no compiler makes.
func rawModule(fns []rawFunc, memory bool, data []byte) []byte {
	var types, funcs, exports, code [][]byte
	for i, f := range fns {
		types = append(types, cat([]byte{0x60}, vec(bytesOf(f.params)), vec(bytesOf(f.results))))
		funcs = append(funcs, uleb(uint32(i)))
		exports = append(exports, cat(name(f.name), []byte{0x00}, uleb(uint32(i))))
		body := cat([]byte{0x00}, f.body, []byte{opEnd}) // no locals
		code = append(code, cat(uleb(uint32(len(body))), body))
	}
	if memory {
		exports = append(exports, cat(name("memory"), []byte{0x02, 0x00}))
	}
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	if len(fns) > 0 {
		out = cat(out, section(1, vec(types)), section(3, vec(funcs)))
	}
	if memory {
		out = cat(out, section(5, vec([][]byte{{0x00, 0x01}})))
	}
	if len(exports) > 0 {
		out = cat(out, section(7, vec(exports)))
	}
	if len(fns) > 0 {
		out = cat(out, section(10, vec(code)))
	}
	if memory && data != nil {
		segment := cat([]byte{0x00, opI32Const}, sleb(dataOffset), []byte{opEnd}, uleb(uint32(len(data))), data)
		out = cat(out, section(11, vec([][]byte{segment})))
	}
	return out
}

// sleb encodes v in signed LEB128, as instructions' constants are.
func sleb(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func section(id byte, content []byte) []byte {
	return cat([]byte{id}, uleb(uint32(len(content))), content)
}

func vec(items [][]byte) []byte { return cat(append([][]byte{uleb(uint32(len(items)))}, items...)...) }

func name(s string) []byte { return cat(uleb(uint32(len(s))), []byte(s)) }

func bytesOf(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

func uleb(v uint32) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
