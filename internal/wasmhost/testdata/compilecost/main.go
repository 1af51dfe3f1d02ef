// Command compilecost measures what compiling a module costs wazero, in
// a fresh process: wall and CPU time, peak RSS, and how long a
// compilation whose context is cancelled after -cancel goes on.
//
//	go run ./internal/wasmhost/testdata/compilecost -wasm guest.wasm [-workers 2] [-cancel 200ms] [-fuel]
//
// With -fuel the module is instrumented by internal/wasmfuel first (as
// wasmhost does with Options.FuelChecks), the rewrite timed apart, and
// compiled without close-on-context-done. With -workers 1 (wazero's default) the compilation ignores its
// context; with 2 or more workers (experimental.WithCompilationWorkers)
// wazero checks it between functions.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/nrikit/nrikit/internal/wasmfuel"
)

func main() {
	wasm := flag.String("wasm", "", "module to compile")
	workers := flag.Int("workers", 1, "compilation workers")
	cancelAfter := flag.Duration("cancel", 0, "cancel the compilation's context after this long (0: never)")
	fuel := flag.Bool("fuel", false, "instrument the module with counters (internal/wasmfuel) first")
	flag.Parse()
	code, err := os.ReadFile(*wasm)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compilecost:", err)
		os.Exit(1)
	}
	if *fuel {
		cpu0, start := cpuTime(), time.Now()
		size := len(code)
		if code, err = wasmfuel.Instrument(code, 1<<16); err != nil {
			fmt.Fprintln(os.Stderr, "compilecost:", err)
			os.Exit(1)
		}
		fmt.Printf("instrument: %v (CPU %v), %d -> %d bytes\n", time.Since(start).Round(time.Millisecond),
			(cpuTime() - cpu0).Round(time.Millisecond), size, len(code))
	}
	ctx := context.Background()
	if *workers > 1 {
		ctx = experimental.WithCompilationWorkers(ctx, *workers)
	}
	if *cancelAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *cancelAfter)
		defer cancel()
	}
	r := wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfig().WithCloseOnContextDone(!*fuel))
	cpu0, start := cpuTime(), time.Now()
	_, err = r.CompileModule(ctx, code)
	wall, cpu := time.Since(start), cpuTime()-cpu0
	fmt.Printf("workers %d: compile %v (CPU %v), error %v; peak RSS (VmHWM) %s\n",
		*workers, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), err, status("VmHWM"))
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// status returns a field of /proc/self/status.
func status(field string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
