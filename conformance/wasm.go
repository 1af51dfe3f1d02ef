package conformance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/outputsummary"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

// CheckLoads is the name of the check that loads a WASM plugin module.
const CheckLoads = "loads as a WASM module"

// notApplicableWASM is the reason of the checks a WASM plugin skips: they
// check the connection of a plugin process or an external plugin.
const notApplicableWASM = "not applicable to WASM plugins"

// wasmLoadTimeout bounds the loading of a WASM module, compilation
// included (seconds for a Go guest without a compilation cache).
const wasmLoadTimeout = 5 * time.Minute

// isWASMModule reports whether the file at path is a WebAssembly module
// (see wasmhost.IsModule), whatever its name and mode. A file that cannot
// be read is not a module.
func isWASMModule(path string) bool {
	ok, err := wasmhost.IsModule(path)
	return ok && err == nil
}

// wasmTarget is the module a WASM check runs against.
type wasmTarget struct {
	plugin *wasmhost.Plugin
	// output keeps the guest's output and the host's messages about it.
	output *outputsummary.Buffer
	// discarded is set when the last call discarded the instance (the
	// guest trapped, exited, timed out or broke the ABI).
	discarded bool
}

// checkWASM runs the checks that apply to a WASM plugin module: it is
// loaded in-process with wasmhost and driven through its
// api.PluginService; the checks of a connection are reported skipped.
func checkWASM(ctx context.Context, cfg PluginConfig) (*Report, error) {
	if len(cfg.Command) > 1 {
		return nil, fmt.Errorf("%s is a WASM module: it takes no arguments", cfg.Command[0])
	}
	if len(cfg.Env) > 0 {
		return nil, fmt.Errorf("%s is a WASM module: Env does not apply", cfg.Command[0])
	}
	c := &pluginCheck{cfg: cfg, world: newWorld(), wasm: &wasmTarget{output: outputsummary.New(0, cfg.Output)}}
	idx, name, _ := api.ParsePluginName(cfg.Name)
	c.inst = &api.PluginInstance{Name: name, Index: idx}
	c.full = cfg.Name
	if !c.loadWASM(ctx) {
		return &c.rec.report, nil
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ExitTimeout)
		defer cancel()
		_ = c.wasm.plugin.Close(cctx)
	}()
	c.rec.skip(CheckRegisters, "%s: a WASM plugin does not register; its Configure answer is its subscription", notApplicableWASM)
	c.rec.skip(CheckIdentity, "%s: a runtime names it after its file (IDX-NAME); checked as %s", notApplicableWASM, c.cfg.Name)
	if !c.configure(ctx) {
		return &c.rec.report, nil
	}
	c.drive(ctx)
	c.rec.skip(CheckCloses, "%s: the runtime closes the module after Shutdown", notApplicableWASM)
	c.scopeKept(ctx)
	return &c.rec.report, nil
}

// loadWASM loads the module with wasmhost and records CheckLoads.
func (c *pluginCheck) loadWASM(ctx context.Context) bool {
	lctx, cancel := context.WithTimeout(ctx, wasmLoadTimeout)
	defer cancel()
	start := time.Now()
	p, err := wasmhost.Load(lctx, c.cfg.Command[0], wasmhost.Options{
		Name:     c.cfg.Name,
		Logger:   slog.New(slog.NewTextHandler(c.wasm.output, nil)),
		CacheDir: c.cfg.WASMCacheDir,
		Reinit:   c.reinitWASM,
		// Bounded as nrikit's runtime bounds it by default (see
		// adaptation.WithWASMContextChecks).
		FuelChecks: true,
	})
	d := time.Since(start)
	if err != nil {
		c.rec.fail(CheckLoads, d, "%v", err)
		return false
	}
	c.wasm.plugin = p
	c.plugin = wasmhost.NewClient(p)
	cache := "no compilation cache"
	if c.cfg.WASMCacheDir != "" {
		cache = "compilation cache " + c.cfg.WASMCacheDir
	}
	c.rec.pass(CheckLoads, d, "%s (%s)", c.cfg.Command[0], cache)
	return true
}

// reinitWASM replays the checker's Configure request on a fresh instance
// that replaces a discarded one, as a runtime does.
func (c *pluginCheck) reinitWASM(ctx context.Context, call func(ctx context.Context, fn string, req []byte) ([]byte, error)) error {
	if c.configureReq == nil {
		return nil
	}
	b, err := proto.Marshal(c.configureReq)
	if err != nil {
		return fmt.Errorf("encoding the Configure request: %w", err)
	}
	if _, err := call(ctx, wasmhost.FuncConfigure, b); err != nil {
		return fmt.Errorf("replaying Configure: %w", err)
	}
	return nil
}

// noteCall records whether the call that returned err discarded the WASM
// instance.
func (t *wasmTarget) noteCall(err error) {
	var ce *wasmhost.CallError
	t.discarded = errors.As(err, &ce) && ce.Discarded
}

// gone describes why the last call discarded the instance, with the
// guest's last output.
func (t *wasmTarget) gone() string {
	reason := "the WASM instance was discarded (the guest trapped, exited, timed out or broke the ABI)"
	if out := t.output.String(); out != "" {
		reason += "; output: " + out
	}
	return reason
}

// describeWASMError describes the error of a call to a WASM plugin, or
// returns "" if err is not wasmhost's.
func describeWASMError(err error) string {
	var ce *wasmhost.CallError
	if !errors.As(err, &ce) {
		return ""
	}
	switch ce.Kind {
	case wasmhost.KindGuest:
		return "error: " + ce.Message
	case wasmhost.KindTimeout:
		return "no answer within the request timeout (instance discarded)"
	}
	// A trap's error has wazero's stack trace on the following lines.
	return strings.Join(outputsummary.Lines(err.Error()), "; ")
}
