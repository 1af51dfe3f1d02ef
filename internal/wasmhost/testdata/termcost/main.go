// Command termcost measures what bounding a WASM call costs: it runs a
// WASI command module (a Go test binary built for wasip1, say) in wazero
// once per mode and passes it the arguments after "--". The modes:
// "none", compiled without any bound (a looping call runs forever);
// "checks", with the termination checks internal/wasmhost's runtimes
// enable by default (wazero's WithCloseOnContextDone); "fuel", the
// module instrumented by internal/wasmfuel (wasmhost's
// Options.FuelChecks), with a host function that checks the deadline
// every 65536 loop headers and function entries; "interp", wazero's
// interpreter with close-on-context-done. The module's output (a
// benchmark's figures) shows the difference:
//
//	GOOS=wasip1 GOARCH=wasm go test -c -o /tmp/fastdecode.wasm ./internal/fastdecode
//	go run ./internal/wasmhost/testdata/termcost -wasm /tmp/fastdecode.wasm -- \
//		-test.run='^$' -test.bench=CreateContainer -test.benchtime=300x
//
// wazero v1.12 implements the checks as an exit from the machine code to
// Go at every loop header; Go compiles each function to WebAssembly as a
// loop (for its goroutine switching), so a Go guest pays it on every
// call. The fuel counters are a decrement and a compare in the machine
// code instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/nrikit/nrikit/internal/wasmfuel"
)

func main() {
	wasm := flag.String("wasm", "", "WASI command module to run")
	modes := flag.String("modes", "none,checks,fuel", "comma-separated modes: none (compiled, unbounded), checks (close-on-context-done), fuel (internal/wasmfuel's counters), interp (interpreter with close-on-context-done)")
	flag.Parse()
	if *wasm == "" {
		fmt.Fprintln(os.Stderr, "termcost: -wasm is required")
		os.Exit(2)
	}
	for _, m := range strings.Split(*modes, ",") {
		if err := run(*wasm, m, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "termcost:", err)
			os.Exit(1)
		}
	}
}

// fuelBudget is the loop headers and function entries between two deadline checks.
const fuelBudget = 1 << 16

// run compiles and runs the module once in the given mode.
func run(path, mode string, args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	code, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cfg := wazero.NewRuntimeConfigCompiler()
	switch mode {
	case "none":
	case "checks":
		cfg = cfg.WithCloseOnContextDone(true)
	case "interp":
		cfg = wazero.NewRuntimeConfigInterpreter().WithCloseOnContextDone(true)
	case "fuel":
		if code, err = wasmfuel.Instrument(code, fuelBudget); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer r.Close(context.WithoutCancel(ctx))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return fmt.Errorf("WASI: %w", err)
	}
	var refuels int64 // calls of the host function (exits from the machine code)
	if mode == "fuel" {
		if _, err := r.NewHostModuleBuilder(wasmfuel.ImportModule).NewFunctionBuilder().
			WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
				refuels++
				if ctx.Err() != nil {
					panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
				}
				stack[0] = fuelBudget
			}), nil, []api.ValueType{api.ValueTypeI32}).
			Export(wasmfuel.ImportName).Instantiate(ctx); err != nil {
			return err
		}
	}
	start := time.Now()
	compiled, err := r.CompileModule(ctx, code)
	if err != nil {
		return fmt.Errorf("compiling %s: %w", path, err)
	}
	fmt.Printf("== mode %s (compiled in %s)\n", mode, time.Since(start).Round(time.Millisecond))
	mcfg := wazero.NewModuleConfig().
		WithArgs(append([]string{path}, args...)...).
		WithStdout(os.Stdout).WithStderr(os.Stderr).
		WithSysNanotime().WithSysWalltime().WithSysNanosleep()
	_, err = r.InstantiateModule(ctx, compiled, mcfg)
	if exit, ok := err.(*sys.ExitError); ok && exit.ExitCode() == 0 {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", path, err)
	}
	if mode == "fuel" {
		fmt.Printf("== %d exits to the host (every %d counts)\n", refuels, fuelBudget)
	}
	return nil
}
