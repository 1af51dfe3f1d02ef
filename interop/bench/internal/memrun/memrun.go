// Package memrun is the body of the memory benchmark's runtime processes
// (bench/runtimes/*): start a runtime with the plugins of a directory, send
// CreateContainer and PostStartContainer requests, and print the process's
// resident memory (workload.Memory).
package memrun

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

// Runtime is what the nrikit and upstream benchmark runtimes have in common.
type Runtime interface {
	Plugins() int
	Prepare(n int)
	Create(ctx context.Context, i int) (int, error)
	PostStart(ctx context.Context) error
	Stop(ctx context.Context) error
}

// StartFunc starts a runtime with the plugins of dir and no existing pods
// or containers.
type StartFunc func(ctx context.Context, dir string) (Runtime, error)

// Main parses the flags (-plugins, -n, -want), runs the benchmark with the
// runtime start returns, and exits non-zero on error, naming the runtime.
func Main(name string, start StartFunc) {
	dir := flag.String("plugins", "", "plugin directory")
	n := flag.Int("n", 1000, "requests of each kind")
	want := flag.Int("want", 0, "plugins that must be registered")
	flag.Parse()
	if err := run(start, *dir, *n, *want); err != nil {
		fmt.Fprintf(os.Stderr, "%s bench runtime: %v\n", name, err)
		os.Exit(1)
	}
}

func run(start StartFunc, dir string, n, want int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt, err := start(ctx, dir)
	if err != nil {
		return err
	}
	defer rt.Stop(ctx)
	if got := rt.Plugins(); got != want {
		return fmt.Errorf("%d plugins registered, want %d", got, want)
	}
	rt.Prepare(n)
	for i := range n {
		if _, err := rt.Create(ctx, i); err != nil {
			return err
		}
		if err := rt.PostStart(ctx); err != nil {
			return err
		}
	}
	rt.Prepare(0)
	m, err := workload.ReadMemory(0)
	if err != nil {
		return err
	}
	fmt.Println(m)
	return nil
}
