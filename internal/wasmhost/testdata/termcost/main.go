// Command termcost measures what bounding a WASM call costs: it runs a
// WASI command module (a Go test binary built for wasip1, say) in wazero
// twice, compiled without and with the termination checks that
// internal/wasmhost's runtimes enable (wazero's WithCloseOnContextDone,
// without which a call cannot be stopped at the request timeout), and
// passes it the arguments after "--". The module's output (a benchmark's
// figures) shows the difference:
//
//	GOOS=wasip1 GOARCH=wasm go test -c -o /tmp/fastdecode.wasm ./internal/fastdecode
//	go run ./internal/wasmhost/testdata/termcost -wasm /tmp/fastdecode.wasm -- \
//		-test.run='^$' -test.bench=CreateContainer -test.benchtime=300x
//
// wazero v1.12 implements the check as an exit from the machine code to Go
// at every loop header; Go compiles each function to WebAssembly as a loop
// (for its goroutine switching), so a Go guest pays it on every call.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

func main() {
	wasm := flag.String("wasm", "", "WASI command module to run")
	flag.Parse()
	if *wasm == "" {
		fmt.Fprintln(os.Stderr, "termcost: -wasm is required")
		os.Exit(2)
	}
	for _, checks := range []bool{false, true} {
		if err := run(*wasm, checks, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "termcost:", err)
			os.Exit(1)
		}
	}
}

// run compiles and runs the module once, with or without termination checks.
func run(path string, checks bool, args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	code, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(checks))
	defer r.Close(context.WithoutCancel(ctx))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return fmt.Errorf("WASI: %w", err)
	}
	start := time.Now()
	compiled, err := r.CompileModule(ctx, code)
	if err != nil {
		return fmt.Errorf("compiling %s: %w", path, err)
	}
	fmt.Printf("== termination checks %v (compiled in %s)\n", checks, time.Since(start).Round(time.Millisecond))
	cfg := wazero.NewModuleConfig().
		WithArgs(append([]string{path}, args...)...).
		WithStdout(os.Stdout).WithStderr(os.Stderr).
		WithSysNanotime().WithSysWalltime().WithSysNanosleep()
	_, err = r.InstantiateModule(ctx, compiled, cfg)
	if exit, ok := err.(*sys.ExitError); ok && exit.ExitCode() == 0 {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", path, err)
	}
	return nil
}
